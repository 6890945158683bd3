// Timeline query latency over the synthetic 1,024-GPU run; prints one JSON line.
//   node --import tsx bench/timeline.ts [--hours 6] [--dir <run dir>] [--warm 7] [--nodes 128]
// Each query group runs in a fresh process: "cold" = first call on a store that has parsed nothing
// (files may sit in the OS page cache), "warm" = median of the repeats that follow.
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineSeries } from '../src/queries/engineSeries.ts';
import { fleet } from '../src/queries/fleet.ts';
import { gpuSeries } from '../src/queries/gpuSeries.ts';
import { encodeHeatmap, heatmap } from '../src/queries/heatmap.ts';
import { outliers } from '../src/queries/outliers.ts';
import { TelemetryStore } from '../src/run/telemetry/store.ts';
import { reusableSyntheticRun, type SyntheticRunInfo } from '../src/demo/syntheticRun.ts';

const HOUR = 3600;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Run shape from the command line; `--nodes` (default 128 of 8 GPUs) shrinks it for a smoke run. */
function runOptions(): { hours: number; gpus?: number } {
  const nodes = arg('nodes');
  return { hours: Number(arg('hours') ?? 6), ...(nodes ? { gpus: Number(nodes) * 8 } : {}) };
}

/** Wall ms, and CPU ms of the whole process (worker threads included). */
function timed(fn: () => unknown): { ms: number; cpuMs: number } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000 };
}

type Query = (store: TelemetryStore, i: number) => unknown;

/**
 * Query groups, one fresh process each. The first query of a group is cold (nothing parsed); later
 * queries of the group run on the blocks the first one parsed ("first" = their first call).
 * `i` counts calls (0 = first) so a variant can defeat the answer caches.
 */
function groups(facts: SyntheticRunInfo): Record<string, Record<string, Query>> {
  const hour = { t0: facts.endTs - 2 * HOUR, t1: facts.endTs - HOUR };
  return {
    gpu: { gpu_1h_64_lanes: (s) => gpuSeries(s, { ...hour, lanes: 'every:16', maxPoints: 2000 }) },
    heatmap_util: { heatmap_util_1h: (s) => encodeHeatmap(heatmap(s, { ...hour, metric: 'util', xBuckets: 1200 })) },
    heatmap_phase: {
      heatmap_phase_1h: (s) => encodeHeatmap(heatmap(s, { ...hour, metric: 'phase', xBuckets: 1200 })),
      heatmap_lifecycle_1h: (s) => encodeHeatmap(heatmap(s, { ...hour, metric: 'lifecycle', xBuckets: 1200 })),
      outliers_slowest_phase_1h: (s) => outliers(s, { ...hour, criterion: 'slowest_phase:actor_train' }),
    },
    fleet: {
      fleet_whole_run: (s) => fleet(s, { xBuckets: 600 }),
      // A different bucket count each call: the answer cache misses, every bucket is recomputed from parsed blocks.
      fleet_whole_run_recomputed: (s, i) => fleet(s, { xBuckets: 599 - i }),
      outliers_lowest_util_whole_run: (s) => outliers(s, { criterion: 'lowest_util' }),
    },
    engine: {
      engine_series_whole_run: (s) => engineSeries(s, { metric: 'sglang_num_running_reqs' }),
      engine_rate_whole_run: (s) => engineSeries(s, { metric: 'sglang_generation_tokens_per_s' }),
      engine_mean_whole_run: (s) => engineSeries(s, { metric: 'sglang_ttft_mean_s' }),
      engine_series_1h: (s) => engineSeries(s, { ...hour, metric: 'sglang_num_running_reqs' }),
    },
  };
}

/** Child mode: one group in this fresh process. */
async function measure(group: string, dir: string, warmRuns: number): Promise<void> {
  const facts = await reusableSyntheticRun(dir, runOptions());
  const store = TelemetryStore.open(join(dir, 'dashboard'));
  const out: Record<string, unknown> = {};
  let first = true;
  for (const [name, fn] of Object.entries(groups(facts)[group])) {
    const cold = timed(() => fn(store, 0));
    const warm: number[] = [];
    for (let i = 1; i <= warmRuns; i++) warm.push(timed(() => fn(store, i)).ms);
    out[name] = { [first ? 'cold_ms' : 'first_ms']: round(cold.ms), [first ? 'cold_cpu_ms' : 'first_cpu_ms']: round(cold.cpuMs), warm_p50_ms: round(median(warm), 2) };
    first = false;
  }
  out.peak_rss_mib = Math.round((process.resourceUsage().maxRSS * 1024) / 2 ** 20);
  process.stdout.write(JSON.stringify(out) + '\n');
}

async function main(): Promise<void> {
  const hours = Number(arg('hours') ?? 6);
  const dir = arg('dir') ?? join(tmpdir(), `rlsight-synthetic-${hours}h`);
  const warmRuns = Number(arg('warm') ?? 7);
  const facts = await reusableSyntheticRun(dir, runOptions(), (m) => process.stderr.write(m + '\n'));
  const self = fileURLToPath(import.meta.url);
  const results: Record<string, unknown> = {};
  for (const name of Object.keys(groups(facts))) {
    const child = spawnSync(process.execPath, ['--import', 'tsx', self, '--measure', name, '--dir', dir, '--hours', String(hours), ...(arg('nodes') ? ['--nodes', arg('nodes')!] : []), '--warm', String(warmRuns)], {
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    });
    if (child.status !== 0) throw new Error(`${name} failed: ${child.stderr}`);
    const r = JSON.parse(child.stdout.trim().split('\n').at(-1)!);
    results[`${name}_peak_rss_mib`] = r.peak_rss_mib;
    delete r.peak_rss_mib;
    Object.assign(results, r);
  }
  const out = {
    bench: 'timeline',
    run: { hours, lanes: facts.gpus, gpu_rows: facts.rows.gpu_util, engine_rows: facts.rows.engine_series, phase_rows: facts.rows.phases, trajectory_rows: facts.rows.trajectories },
    ...results,
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

if (process.argv.includes('--measure')) await measure(arg('measure')!, arg('dir')!, Number(arg('warm') ?? 7));
else await main();
