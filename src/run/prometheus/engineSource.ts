// SGLang engine series held by a Prometheus server (slime keeps serving metrics there rather than in the
// run): range queries over `/api/v1/query_range`, SGLang's metric names (`sglang:num_running_reqs`)
// mapped onto rlsight's (`sglang_num_running_reqs`), the step chosen so a series stays within maxPoints.
import type { EngineSeries } from '../../wire/timeline.ts';
import { SourceUnavailable } from '../errors.ts';

/** Prometheus answered with an error, or could not be reached (HTTP 503 to a client: try again later). */
export class PrometheusUnavailable extends SourceUnavailable {
  override readonly name: string = 'PrometheusUnavailable';
}

/**
 * SGLang histograms (`…_bucket/_sum/_count`) are served as their mean over the step, under
 * `<name>_mean`; every other `sglang:*` series is a gauge or counter named with `_` for `:`.
 */
export function rlsightName(promName: string): string | null {
  if (!promName.startsWith('sglang:')) return null;
  const base = promName.replace(/^sglang:/, 'sglang_');
  if (/_bucket$/.test(base)) return null;
  const hist = /^(.*)_(sum|count)$/.exec(base);
  if (hist) return `${hist[1]}_mean`;
  return base;
}

/** The PromQL for one of our names: a plain selector, or the histogram mean as rate(sum) / rate(count). */
export function promQuery(name: string, step: number): string {
  const prom = name.replace(/^sglang_/, 'sglang:');
  const m = /^(.*)_mean$/.exec(prom);
  if (m) {
    const range = `${Math.max(2 * step, 15)}s`;
    return `rate(${m[1]}_sum[${range}]) / rate(${m[1]}_count[${range}])`;
  }
  return prom;
}

/** The query step (whole seconds, at least 1) that keeps a window within maxPoints samples. */
export function stepFor(t0: number, t1: number, maxPoints: number): number {
  return Math.max(1, Math.ceil((t1 - t0) / Math.max(1, maxPoints - 1)));
}

interface PromResponse<T> {
  status: 'success' | 'error';
  data?: T;
  error?: string;
}

interface RangeResult {
  resultType: 'matrix';
  result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }>;
}

export class PrometheusEngineSource {
  private names: { at: number; list: string[] } | null = null;

  constructor(
    /** Base URL, e.g. http://127.0.0.1:9090. */
    readonly baseUrl: string,
    private readonly timeoutMs = 10_000,
  ) {
    const u = new URL(baseUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`--prometheus: expected an http(s) URL, got ${baseUrl}`);
  }

  private async get<T>(path: string, params: Record<string, string>): Promise<T> {
    const url = new URL(path, this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new PrometheusUnavailable(`Prometheus at ${this.baseUrl} is not reachable: ${(err as Error).message}`);
    }
    let body: PromResponse<T>;
    try {
      body = (await res.json()) as PromResponse<T>;
    } catch {
      throw new PrometheusUnavailable(`Prometheus at ${this.baseUrl} answered ${res.status} without JSON`);
    }
    if (body.status !== 'success' || body.data === undefined) throw new PrometheusUnavailable(`Prometheus at ${this.baseUrl}: ${body.error ?? `HTTP ${res.status}`}`);
    return body.data;
  }

  /** Our names of the SGLang series Prometheus holds (cached for 30 s). */
  async metricNames(): Promise<string[]> {
    const now = Date.now();
    if (this.names && now - this.names.at < 30_000) return this.names.list;
    const all = await this.get<string[]>('api/v1/label/__name__/values', {});
    const list = [...new Set(all.map(rlsightName).filter((n): n is string => n !== null))].sort();
    this.names = { at: now, list };
    return list;
  }

  /** One series per scraped instance (and label set) over [t0, t1]. */
  async series(metric: string, t0: number, t1: number, maxPoints: number): Promise<EngineSeries[]> {
    const step = stepFor(t0, t1, maxPoints);
    const data = await this.get<RangeResult>('api/v1/query_range', { query: promQuery(metric, step), start: String(t0), end: String(t1), step: String(step) });
    return data.result.map((r) => {
      // scraped through the router, a sample names its engine in worker_addr (the instance is the router)
      const { __name__: _n, instance, job: _j, worker_addr: worker, ...labels } = r.metric;
      const values = r.values.slice(0, maxPoints);
      const engine = worker ?? instance;
      return {
        addr: engine ? (/^https?:\/\//.test(engine) ? engine : `http://${engine}`) : 'prometheus',
        labels,
        ts: values.map((v) => Number(v[0])),
        value: values.map((v) => Number(v[1])),
      };
    });
  }
}
