// The request sequence the server benches replay, resolved against a run through a server answering it:
// the reference's (whole-run answers, all lanes, a step's summary, a long sample's tokens) and what a
// viewer's screens ask beside them (meta, metrics, topology, one lane's window, the step's groups and lanes).

/** The binary frame the app reads (the `*_columns` families ask for it). */
export const COLUMNS = 'application/vnd.rlsight.columns';

export interface Request {
  path: string;
  accept?: string;
}

/** GET `path` of the server at `base` as JSON. */
async function json(base: string, path: string): Promise<any> {
  const res = await fetch(base + path);
  if (!res.ok) throw new Error(`${path} answered ${res.status}`);
  return res.json();
}

export interface Sequence {
  /** The reference's request sequence (bench/server.ts times each family). */
  reference: Record<string, Request>;
  /** What a viewer's screens ask beside them: the cheap answers that must stay quick under load, and the step's groups and lanes. */
  viewer: Record<string, Request>;
}

/** The sequence over the run `base` serves: its last hour, its last train step's longest sample, an engine metric. */
export async function resolveSequence(base: string): Promise<Sequence> {
  const meta = await json(base, '/api/meta');
  const [r0, r1] = meta.time_range ?? [0, 0];
  const win = `t0=${Math.max(r0, r1 - 3600)}&t1=${r1}`;
  const rid = meta.rollout_ids.train.at(-1) ?? 0;
  const summary = await json(base, `/api/rollout/${rid}/summary`);
  const longest = [...(summary.rows ?? [])].sort((a: any, b: any) => (b.total_length ?? 0) - (a.total_length ?? 0))[0];
  const sampleIndex = longest?.sample_index ?? 0;
  const engineMetric = meta.engine_metric_keys.includes('sglang_num_running_reqs') ? 'sglang_num_running_reqs' : meta.engine_metric_keys[0];
  const step = Math.max(0, rid - 1);
  const metricKeys = (meta.metric_keys as string[]).slice(0, 4).map(encodeURIComponent).join(',');
  return {
    reference: {
      advisory_run: { path: '/api/advisory' },
      engine_series_run: { path: `/api/timeline/engine_series?metric=${encodeURIComponent(engineMetric ?? 'none')}` },
      fleet_run: { path: '/api/timeline/fleet' },
      gpu_1h_64: { path: `/api/timeline/gpu?${win}&lanes=g:0-63` },
      summary: { path: `/api/rollout/${step}/summary` },
      tokens: { path: `/api/rollout/${rid}/sample/${sampleIndex}/tokens` },
      gpu_1h_all: { path: `/api/timeline/gpu?${win}` },
      gpu_1h_64_columns: { path: `/api/timeline/gpu?${win}&lanes=g:0-63`, accept: COLUMNS },
      gpu_1h_all_columns: { path: `/api/timeline/gpu?${win}`, accept: COLUMNS },
      outliers: { path: '/api/timeline/outliers?criterion=lowest_util' },
      heatmap_util_1h: { path: `/api/timeline/heatmap?metric=util&${win}` },
      phases_1h_64: { path: `/api/timeline/phases?${win}&lanes=g:0-63` },
    },
    viewer: {
      meta: { path: '/api/meta' },
      metrics: { path: `/api/metrics?keys=${metricKeys}` },
      topology: { path: '/api/timeline/topology' },
      gpu_1h_1_columns: { path: `/api/timeline/gpu?${win}&lanes=g:0`, accept: COLUMNS },
      phases_1h_1: { path: `/api/timeline/phases?${win}&lanes=g:0` },
      groups: { path: `/api/rollout/${step}/groups` },
      trajectories: { path: `/api/rollout/${step}/trajectories` },
    },
  };
}
