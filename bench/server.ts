// Server latency per endpoint family (cold, then warm p50/p99), start-to-first-answer and peak RSS.
// Usage: node --import tsx bench/server.ts [--run DIR] [--large] [--warm N]
// Without --run it generates the demo run (`--large`: 128 GPUs) into a temp folder first. Each family is
// measured on a fresh server process (cold = its first request, warm = the N that follow). Prints one JSON line.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { run: { type: 'string' }, large: { type: 'boolean' }, warm: { type: 'string' }, port: { type: 'string' } },
});
const warmRuns = Number(values.warm ?? 20);
const port = Number(values.port ?? 17788);

let runDir = values.run ? resolve(values.run) : '';
let scratch: string | null = null;
if (!runDir) {
  scratch = mkdtempSync(join(tmpdir(), 'rlsight-bench-'));
  runDir = join(scratch, 'run');
  const { generateDemoRun } = await import('../src/demo/index.ts');
  await generateDemoRun(runDir, { large: values.large ?? false });
}

const base = `http://127.0.0.1:${port}`;
let peakRssKb = 0;

/** A fresh server process over the run: "cold" answers come from a process that has read nothing yet. */
async function startServer(): Promise<{ child: ChildProcess; firstAnswerMs: number; stop: () => Promise<void> }> {
  const started = performance.now();
  const child = spawn(process.execPath, [join(repoRoot, 'bin', 'rlsight.mjs'), 'serve', '--dump-details', runDir, '--port', String(port)], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    try {
      const r = await get('/api/meta');
      if (r.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const firstAnswerMs = performance.now() - started;
  const stop = async (): Promise<void> => {
    sampleRss(child);
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return { child, firstAnswerMs, stop };
}

function sampleRss(child: ChildProcess): void {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
    if (m) peakRssKb = Math.max(peakRssKb, Number(m[1]));
  } catch {
    /* the process is gone */
  }
}

async function get(path: string): Promise<{ ms: number; status: number; bytes: number }> {
  const t = performance.now();
  const res = await fetch(base + path, { headers: { 'accept-encoding': 'gzip' } });
  const body = await res.arrayBuffer();
  return { ms: performance.now() - t, status: res.status, bytes: body.byteLength };
}

const first = await startServer();
const firstAnswerMs = first.firstAnswerMs;
const meta: any = await (await fetch(`${base}/api/meta`)).json();
const laneCount: number = ((await (await fetch(`${base}/api/timeline/topology`)).json()) as any).lanes.length;
const [r0, r1] = meta.time_range ?? [0, 0];
const hourT0 = Math.max(r0, r1 - 3600);
const win = `t0=${hourT0}&t1=${r1}`;
const rid = meta.rollout_ids.train.at(-1) ?? 0;
const summary: any = await (await fetch(`${base}/api/rollout/${rid}/summary`)).json();
const longest = [...(summary.rows ?? [])].sort((a: any, b: any) => (b.total_length ?? 0) - (a.total_length ?? 0))[0];
const sampleIndex = longest?.sample_index ?? 0;
const engineMetric = meta.engine_metric_keys.includes('sglang_num_running_reqs') ? 'sglang_num_running_reqs' : meta.engine_metric_keys[0];
const metricKeys = meta.metric_keys.slice(0, 8).join(',');

// One representative request per family; the summary is asked first above, so it is measured on a fresh step.
const families: Record<string, string> = {
  meta: '/api/meta',
  topology: '/api/timeline/topology',
  phases_1h_64: `/api/timeline/phases?${win}&lanes=g:0-63`,
  gpu_1h_64: `/api/timeline/gpu?${win}&lanes=g:0-63`,
  gpu_processes: `/api/timeline/gpu_processes?${win}&lanes=g:0-63`,
  heatmap_util_1h: `/api/timeline/heatmap?metric=util&${win}`,
  heatmap_phase: `/api/timeline/heatmap?metric=phase&${win}`,
  fleet_run: '/api/timeline/fleet',
  outliers: '/api/timeline/outliers?criterion=lowest_util',
  engine_series_run: `/api/timeline/engine_series?metric=${encodeURIComponent(engineMetric ?? 'none')}`,
  bubbles: '/api/timeline/bubbles',
  metrics: `/api/metrics?keys=${encodeURIComponent(metricKeys || 'dump/reward_mean')}`,
  advisory_run: '/api/advisory',
  advisory_1h: `/api/advisory?${win}`,
  summary: `/api/rollout/${Math.max(0, rid - 1)}/summary`,
  groups: `/api/rollout/${rid}/groups`,
  trajectories: `/api/rollout/${rid}/trajectories`,
  tokens: `/api/rollout/${rid}/sample/${sampleIndex}/tokens`,
  messages: `/api/rollout/${rid}/sample/${sampleIndex}/messages`,
};

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const round = (x: number): number => Math.round(x * 10) / 10;

await first.stop();

const results: Record<string, unknown> = {};
for (const [name, path] of Object.entries(families)) {
  const server = await startServer();
  const cold = await get(path);
  const warm: number[] = [];
  for (let i = 0; i < warmRuns; i++) warm.push((await get(path)).ms);
  await server.stop();
  results[name] = { status: cold.status, bytes: cold.bytes, cold_ms: round(cold.ms), warm_p50_ms: round(pct(warm, 50)), warm_p99_ms: round(pct(warm, 99)) };
}
if (scratch) rmSync(scratch, { recursive: true, force: true });

console.log(
  JSON.stringify({
    bench: 'server',
    run: values.run ? runDir : `demo${values.large ? ' --large' : ''}`,
    lanes: laneCount,
    first_answer_ms: round(firstAnswerMs),
    peak_rss_mb: round(peakRssKb / 1024),
    warm_runs: warmRuns,
    endpoints: results,
  }),
);
