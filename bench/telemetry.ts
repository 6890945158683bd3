// Telemetry store benchmark over a synthetic 1,024-GPU run; prints one JSON line.
//   node --import tsx bench/telemetry.ts [--hours 6|24] [--dir <run dir>]
// "Cold" = the store has not parsed the data yet (the files may sit in the OS page cache). CPU times
// are the whole process's (parse workers included).
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reusableSyntheticRun } from '../src/demo/syntheticRun.ts';
import { engineMetricNames } from '../src/queries/engineSeries.ts';
import { resolveLanes } from '../src/queries/lanes.ts';
import { phasesByLane } from '../src/queries/phases.ts';
import { TelemetryStore } from '../src/run/telemetry/store.ts';

const HOUR = 3600;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function timed<T>(fn: () => T): { ms: number; cpuMs: number; value: T } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, value };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

/** Child mode: process start → time range + lane index + meta (metric keys, engine metric names) answered. */
function firstAnswer(dashboard: string): void {
  const open = timed(() => {
    const store = TelemetryStore.open(dashboard);
    return {
      range: store.timeRange(),
      lanes: store.laneIndex().length,
      meta: store.meta()?.run_name ?? null,
      keys: store.metricKeys().length,
      engineMetrics: engineMetricNames(store).length,
    };
  });
  process.stdout.write(JSON.stringify({ since_process_start_ms: performance.now(), open_ms: open.ms, answer: open.value }) + '\n');
}

async function main(): Promise<void> {
  const hours = Number(arg('hours') ?? 6);
  const dir = arg('dir') ?? join(tmpdir(), `rlsight-synthetic-${hours}h`);
  const began = performance.now();
  const info = await reusableSyntheticRun(dir, { hours }, (m) => process.stderr.write(m + '\n'));
  const gen = { ms: performance.now() - began };
  const facts = { start: info.startTs, end: info.endTs };
  const dashboard = join(dir, 'dashboard');

  // 1. process start → first answer, in a fresh process
  const self = fileURLToPath(import.meta.url);
  const child = spawnSync(process.execPath, ['--import', 'tsx', self, '--first-answer', dashboard], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`first-answer child failed: ${child.stderr}`);
  const first = JSON.parse(child.stdout.trim().split('\n').at(-1)!);

  const sumRows = (blocks: { length: number }[]): number => blocks.reduce((a, b) => a + b.length, 0);

  // 2. one core: gpu_util parse rate on one cold hour, and 64 lanes over a 1 h window read selectively
  const serial = TelemetryStore.open(dashboard, { parseWorkers: 0 });
  const hourT = facts.start + HOUR + 10;
  const oneHour = timed(() => serial.gpuUtilBlocks(hourT, hourT + 1));
  const hourRows = sumRows(oneHour.value);
  const bytesPerRow = serial.stats().gpu_util.bytesResident / hourRows;
  const sel64 = resolveLanes('every:16', serial.laneIndex())!;
  const gpuWindow: [number, number] = [facts.end - 2 * HOUR - 1800, facts.end - HOUR - 1800];
  const serialView = timed(() => TelemetryStore.open(dashboard, { parseWorkers: 0 }).gpuUtilBlocks(...gpuWindow, sel64));

  // 3. with the parse workers (cores - 1), started at open and awaited: the same reads, cold again
  const opened = performance.now();
  const store = TelemetryStore.open(dashboard);
  const workers = store.parseWorkersReady();
  const workerStartMs = performance.now() - opened;
  const cold = timed(() => phasesByLane(store, { t0: facts.end - 2 * HOUR, t1: facts.end - HOUR, lanes: sel64 }));
  const warm: number[] = [];
  for (let i = 0; i < 7; i++) warm.push(timed(() => phasesByLane(store, { t0: facts.end - 2 * HOUR, t1: facts.end - HOUR, lanes: sel64 })).ms);
  const gpuView = timed(() => store.gpuUtilBlocks(...gpuWindow, sel64));
  const oneMetric = timed(() => store.engineSeriesBlocks(null, null, ['sglang_num_running_reqs']));
  const allGpu = timed(() => store.gpuUtilBlocks());
  const gpuRows = sumRows(allGpu.value);
  const allEngine = timed(() => store.engineSeriesBlocks());
  const engineRows = sumRows(allEngine.value);
  const engineStats = store.stats().engine_series;
  store.close();

  const rss = process.resourceUsage().maxRSS * 1024;
  const out = {
    bench: 'telemetry',
    run: { hours, lanes: info.gpus, gpu_rows: info.rows.gpu_util, engine_rows: info.rows.engine_series, phase_rows: info.rows.phases, trajectory_rows: info.rows.trajectories, gib: round(info.bytes / 2 ** 30, 2) },
    first_answer_ms: round(first.since_process_start_ms),
    first_answer_open_ms: round(first.open_ms),
    one_core: {
      gpu_util_rows_per_s: Math.round(hourRows / (oneHour.ms / 1000)),
      gpu_util_rows_per_cpu_s: Math.round(hourRows / (oneHour.cpuMs / 1000)),
      gpu_util_bytes_per_row_resident: round(bytesPerRow, 2),
      gpu_util_1h_64_lanes_cold_ms: round(serialView.ms),
      gpu_util_1h_64_lanes_cold_cpu_ms: round(serialView.cpuMs),
    },
    parse_workers: workers,
    parse_workers_start_ms: round(workerStartMs),
    gpu_util_1h_64_lanes_cold_ms: round(gpuView.ms),
    gpu_util_1h_64_lanes_cold_cpu_ms: round(gpuView.cpuMs),
    gpu_util_1h_64_lanes_rows: sumRows(gpuView.value),
    engine_series_one_metric_whole_run_cold_ms: round(oneMetric.ms),
    engine_series_one_metric_whole_run_cold_cpu_ms: round(oneMetric.cpuMs),
    engine_series_one_metric_rows: sumRows(oneMetric.value),
    phases_1h_64_lanes_cold_ms: round(cold.ms),
    phases_1h_64_lanes_cold_cpu_ms: round(cold.cpuMs),
    phases_1h_64_lanes_warm_p50_ms: round(median(warm), 2),
    phases_rows_answered: cold.value.length,
    gpu_util_whole_run_parse_s: round(allGpu.ms / 1000, 2),
    gpu_util_whole_run_parse_cpu_s: round(allGpu.cpuMs / 1000, 2),
    gpu_util_whole_run_rows_per_s: Math.round(gpuRows / (allGpu.ms / 1000)),
    engine_series_whole_run_parse_s: round(allEngine.ms / 1000, 2),
    engine_series_whole_run_parse_cpu_s: round(allEngine.cpuMs / 1000, 2),
    engine_series_whole_run_rows_per_s: Math.round(engineRows / (allEngine.ms / 1000)),
    engine_series_bytes_per_row_resident: round(engineStats.bytesResident / engineRows, 2),
    peak_rss_mib: Math.round(rss / 2 ** 20),
    generate_s: info.reused ? 0 : round(gen.ms / 1000, 1),
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

if (process.argv.includes('--first-answer')) firstAnswer(arg('first-answer')!);
else await main();
