// SGLang engine series held by a Prometheus server (slime keeps serving metrics there rather than in the
// run): range queries over `/api/v1/query_range` that answer what a collected run answers for the same
// engines — SGLang's names in either spelling (`sglang:num_running_reqs` from an engine,
// `sglang_num_running_reqs` from the router) under the collector's (`sglang_num_running_reqs`), only the
// metrics it scrapes, dp ranks folded as it folds them, counters as rates and histograms as means; the
// step chosen so a series stays within maxPoints.
import { DEFAULT_ENGINE_METRICS } from '../../formats/dashboard/index.ts';
import type { EngineSeries } from '../../wire/timeline.ts';
import { SourceUnavailable } from '../errors.ts';
import { compareNodes, type OutsideEngineQuery } from '../model.ts';

/** Prometheus answered with an error, or could not be reached (HTTP 503 to a client: try again later). */
export class PrometheusUnavailable extends SourceUnavailable {
  override readonly name: string = 'PrometheusUnavailable';
}

const SCRAPED = new Set(DEFAULT_ENGINE_METRICS);

/** The name the collector stores for a Prometheus series name, or null when it does not scrape it. */
export function rlsightName(promName: string): string | null {
  if (!/^sglang[:_]/.test(promName)) return null;
  const name = promName.replace(/^sglang[:_]/, 'sglang_');
  return SCRAPED.has(name) ? name : null;
}

/** A selector of a stored name in both SGLang spellings. */
function selector(name: string): string {
  return `{__name__=~"sglang[:_]${name.replace(/^sglang_/, '')}"}`;
}

/**
 * The PromQL of one served metric. Grouped by the engine (`instance`, or the router's `worker_addr`) and the
 * labels the collector keeps, so a Prometheus scraping an engine both directly and through the router
 * answers it twice (told apart by `series`), never summed twice.
 */
export function promQuery(q: OutsideEngineQuery, step: number): string {
  const by = `by (instance, worker_addr, engine_type${q.fold === 'none' ? ', dp_rank' : ''})`;
  const agg = q.fold === 'mean' ? 'avg' : 'sum';
  const range = `${Math.max(2 * step, 15)}s`;
  if (q.kind === 'gauge') return `${agg} ${by} (${selector(q.base)})`;
  if (q.kind === 'rate') return `${agg} ${by} (rate(${selector(q.base)}[${range}]))`;
  // an interval with no request has no mean (the collector leaves it out too)
  return `${agg} ${by} (rate(${selector(`${q.base}_sum`)}[${range}])) / (${agg} ${by} (rate(${selector(`${q.base}_count`)}[${range}])) > 0)`;
}

/** A sample value as Prometheus writes it (`NaN`, `+Inf`, `-Inf` included). */
function sampleValue(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
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

  /** The collector's names of the SGLang series Prometheus holds (cached for 30 s). */
  async metricNames(): Promise<string[]> {
    const now = Date.now();
    if (this.names && now - this.names.at < 30_000) return this.names.list;
    const all = await this.get<string[]>('api/v1/label/__name__/values', {});
    const list = [...new Set(all.map(rlsightName).filter((n): n is string => n !== null))].sort();
    this.names = { at: now, list };
    return list;
  }

  /** One series per engine (and kept labels) over [t0, t1], in the order a collected run answers them. */
  async series(q: OutsideEngineQuery, t0: number, t1: number, maxPoints: number): Promise<EngineSeries[]> {
    const step = stepFor(t0, t1, maxPoints);
    const data = await this.get<RangeResult>('api/v1/query_range', { query: promQuery(q, step), start: String(t0), end: String(t1), step: String(step) });
    const byKey = new Map<string, EngineSeries & { direct: boolean }>();
    for (const r of data.result) {
      // scraped through the router, a sample names its engine in worker_addr (the instance is the router)
      const { instance, worker_addr: worker, engine_type: engineType, dp_rank: dpRank } = r.metric;
      const engine = worker || instance;
      const labels: Record<string, string> = {};
      if (engineType) labels.engine_type = engineType;
      if (dpRank) labels.dp_rank = dpRank;
      const values = r.values.slice(0, maxPoints);
      const s = {
        addr: engine ? (/^https?:\/\//.test(engine) ? engine : `http://${engine}`) : 'prometheus',
        labels,
        ts: values.map((v) => Number(v[0])),
        value: values.map((v) => sampleValue(v[1])),
        direct: !worker,
      };
      // an engine Prometheus scrapes both itself and through the router: its own scrape is kept
      const key = `${s.addr}\u0000${JSON.stringify(Object.entries(labels).sort())}`;
      const had = byKey.get(key);
      if (had === undefined || (s.direct && !had.direct)) byKey.set(key, s);
    }
    return [...byKey.values()]
      .sort((a, b) => compareNodes(a.addr, b.addr) || (JSON.stringify(a.labels) < JSON.stringify(b.labels) ? -1 : 1))
      .map(({ direct: _direct, ...s }) => s);
  }
}
