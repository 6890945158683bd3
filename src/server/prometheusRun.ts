// `--prometheus URL`: a run recorded without scraped engine series takes them from Prometheus range
// queries instead (the Compute Utilization overlays and the sglang metrics category). A run that has
// its own engine_series stream keeps it.
import { PrometheusEngineSource } from '../run/open.ts';
import type { EngineSeriesAnswer } from '../wire/timeline.ts';
import type { Presentation, RunSources, Window } from '../queries/runAnswers.ts';
import type { Meta } from '../wire/meta.ts';

/** Without a window, the last hour is asked for. */
export const PROMETHEUS_DEFAULT_WINDOW_S = 3600;

export function withPrometheus(run: RunSources, source: PrometheusEngineSource, now: () => number = () => Date.now() / 1000): RunSources {
  let own: boolean | null = null;
  const plainMeta = (): Promise<Meta> => run.meta({ follow: false, useUtilizationOverview: false });
  const hasOwn = async (): Promise<boolean> => (own ??= (await plainMeta()).capabilities.has_engine_series);
  const wrapped: RunSources = Object.create(run) as RunSources;
  // Prometheus answers change with time, not with the run's files: none of this run's telemetry answers is kept
  wrapped.telemetryVersion = undefined;
  wrapped.meta = async (p: Presentation): Promise<Meta> => {
    const m = await run.meta(p);
    if (m.capabilities.has_engine_series) return m;
    let names: string[] = [];
    try {
      names = await source.metricNames();
    } catch {
      // Prometheus down: the run is still served, without engine series.
    }
    return { ...m, engine_metric_keys: names, capabilities: { ...m.capabilities, has_engine_series: names.length > 0 } };
  };
  wrapped.engineSeries = async (w: Window & { metric: string; maxPoints: number; perDpRank: boolean }): Promise<EngineSeriesAnswer> => {
    if (await hasOwn()) return run.engineSeries(w);
    const range = (await plainMeta()).time_range;
    const t1 = w.t1 ?? range?.[1] ?? now();
    const t0 = w.t0 ?? Math.max(range?.[0] ?? -Infinity, t1 - PROMETHEUS_DEFAULT_WINDOW_S);
    return { series: await source.series(w.metric, t0, t1, w.maxPoints) };
  };
  return wrapped;
}

/** `--prometheus URL` over an open run (a bad URL is a usage problem naming the flag). */
export async function prometheusFor(run: RunSources, url: string): Promise<RunSources> {
  return withPrometheus(run, new PrometheusEngineSource(url));
}
