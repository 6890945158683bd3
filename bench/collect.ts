// Collector and producer costs; prints one JSON line.
//   node --import tsx bench/collect.ts
// ingest_records_per_s: gpu_util lines through Collector.ingest (check + encode + hold + the
//   write-ahead log's appends and group fsyncs, as `rlsight collect` runs) and the flush that appends
//   them, per CPU second of the process; over_http (wall time) adds loopback HTTP batches of 1,000
//   lines, each answered once it is in the write-ahead log.
// python_*_us: rlsight client CPU time per call in the training thread (the sender thread idle);
//   python_samples_us_per_sample: client.samples() per sample of a 64-sample step of 1,000 tokens (once per step).
// rss_mib: collector process RSS before, holding a 10x burst (10 x 1,024 GPUs x one 5 s flush
//   interval of 1 Hz samples, unflushed), and holding a full 500,000-record buffer.
// engine_*: engine_series lines of a 1,024-GPU run (128 engines x 23 metrics every 2 s) through ingest
//   and a flush every simulated minute (the flush parses them into the hour's columns); the RSS after
//   a whole hour was flushed, i.e. what the growing hour's columns hold, and after the next hour began.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Collector } from '../src/collect/collector.ts';
import { startCollectorService } from '../src/collect/service.ts';
import { engineSampleLine, gpuUtilLine } from '../src/formats/dashboard/encode.ts';
import { DEFAULT_ENGINE_METRICS } from '../src/formats/dashboard/index.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = mkdtempSync(join(tmpdir(), 'rlsight-bench-collect-'));
const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;

/** `n` lines of a 1,024-GPU fleet sampled at 1 Hz, in batches of `batch` lines. */
function batches(n: number, batch: number, t0 = 1_755_800_000): string[] {
  const out: string[] = [];
  let lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const ts = t0 + Math.floor(i / 1024) + 0.25;
    lines.push(gpuUtilLine(ts, `10.0.${(i >> 3) & 127}.${1 + ((i >> 10) & 1)}`, i & 7, (i * 7) % 101, 60000 + (i & 1023), 300 + (i & 255)));
    if (lines.length === batch) {
      out.push(lines.join('\n') + '\n');
      lines = [];
    }
  }
  if (lines.length) out.push(lines.join('\n') + '\n');
  return out;
}

/** One minute of engine_series scrapes of 128 engines (23 metrics every 2 s) starting at `t0`, as one NDJSON body per tick. */
function engineMinute(t0: number): string[] {
  const out: string[] = [];
  for (let s = 0; s < 60; s += 2) {
    let body = '';
    for (let e = 0; e < 128; e++) {
      const addr = `http://10.0.${e >> 6}.${1 + (e & 63)}:15000`;
      DEFAULT_ENGINE_METRICS.forEach((m, k) => (body += engineSampleLine(t0 + s + 0.5, addr, m, '{}', ((s * 7 + e + k) % 97) * 1.5) + '\n'));
    }
    out.push(body);
  }
  return out;
}

/** `minutes` of engine scrapes through a collector flushed every simulated minute; CPU rate and RSS. */
function engineHour(minutes: number, t0 = 1_755_799_200): { records_per_s: number; rss_hour_mib: number; rss_next_hour_mib: number; array_buffers_hour_mib: number; array_buffers_next_hour_mib: number } {
  let clock = t0;
  const c = new Collector({ dashboardDir: join(root, 'engine'), log: () => {}, now: () => clock });
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  let records = 0;
  let ms = 0;
  const minute = (m: number) => {
    const bodies = engineMinute(t0 + m * 60);
    const a = cpu();
    for (const b of bodies) records += (c.ingest('engine_series', b) as { accepted: number }).accepted;
    clock = t0 + m * 60 + 60;
    c.flush();
    ms += cpu() - a;
  };
  for (let m = 0; m < minutes; m++) minute(m);
  global.gc?.();
  const hour = process.memoryUsage();
  minute(60); // the next hour begins: the completed one is written and let go
  global.gc?.();
  const next = process.memoryUsage();
  c.close();
  return {
    records_per_s: Math.round(records / (ms / 1000)),
    rss_hour_mib: mib(hour.rss),
    rss_next_hour_mib: mib(next.rss),
    array_buffers_hour_mib: mib(hour.arrayBuffers),
    array_buffers_next_hour_mib: mib(next.arrayBuffers),
  };
}

function ingestRate(n: number): { records_per_s: number; flush_ms: number } {
  const c = new Collector({ dashboardDir: join(root, `ingest${n}`), bufferCap: n + 1, log: () => {}, writeAheadLog: true });
  const bodies = batches(n, 1000);
  // the bytes each batch arrived as (the HTTP handler has them; the log keeps them as they are)
  const raw = bodies.map((b) => Buffer.from(b, 'utf8'));
  // CPU time, not wall time: on a loaded machine the process is often descheduled
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const t0 = cpu();
  for (let i = 0; i < bodies.length; i++) c.ingest('gpu_util', bodies[i], { producer: 'bench', seq: i + 1 }, raw[i]);
  const t1 = cpu();
  c.flush();
  const t2 = cpu();
  return { records_per_s: Math.round(n / ((t2 - t0) / 1000)), flush_ms: Math.round(t2 - t1) };
}

async function httpRate(n: number): Promise<number> {
  const svc = await startCollectorService({ dashboardDir: join(root, 'http', 'dashboard'), port: 0, flushIntervalS: 1, bufferCap: n + 1, log: () => {} });
  const bodies = batches(n, 1000);
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const res = await fetch(`${svc.address}/v1/streams/gpu_util`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body });
      await res.arrayBuffer();
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  const ms = performance.now() - t0;
  await svc.close();
  return Math.round(n / (ms / 1000));
}

function rss(): { before: number; burst: number; full: number } {
  global.gc?.();
  const before = process.memoryUsage().rss;
  const c = new Collector({ dashboardDir: join(root, 'rss'), log: () => {} });
  for (const b of batches(10 * 1024 * 5, 1000)) c.ingest('gpu_util', b);
  const burst = process.memoryUsage().rss;
  for (const b of batches(500_000 - 10 * 1024 * 5, 1000, 1_755_900_000)) c.ingest('gpu_util', b);
  const full = process.memoryUsage().rss;
  c.flush();
  return { before: mib(before), burst: mib(burst), full: mib(full) };
}

function pythonOverhead(): { log_us: number; phase_us: number; sample_us: number } | { error: string } {
  const script = `
import sys, time
sys.path.insert(0, ${JSON.stringify(join(REPO, 'python'))})
from rlsight.client import Client
c = Client("http://127.0.0.1:9", "t" * 43, node="n", gpus=[0], rank=0, queue_size=10**7, batch_size=10**7, batch_seconds=3600, register_atexit=False)
N = 200000
m = {"train/loss": 0.5, "train/grad_norm": 1.25, "train/step": 3}
clock = time.thread_time  # CPU time of the calling thread: what the training loop pays
t = clock()
for i in range(N):
    c.log(m, step=3, step_key="train/step")
log_us = (clock() - t) / N * 1e6
t = clock()
for i in range(N):
    with c.phase("actor_train"):
        pass
phase_us = (clock() - t) / N * 1e6
# one rollout step's samples (64 samples of 1,000 tokens, 800 of them response), recorded once per step
step = [{"index": i, "group_index": i // 8, "prompt": "q" * 200, "response": "a" * 800, "tokens": list(range(1000)),
         "response_length": 800, "reward": 1.0, "loss_mask": [1] * 800, "rollout_log_probs": [-0.5] * 800} for i in range(64)]
t = clock()
for k in range(20):
    c.samples(k, step)
sample_us = (clock() - t) / (20 * 64) * 1e6
print(log_us, phase_us, sample_us)
`;
  const r = spawnSync('python3', ['-c', script], { encoding: 'utf8' });
  if (r.status !== 0) return { error: r.stderr.trim().split('\n').at(-1) ?? 'python3 failed' };
  const [log, phase, sample] = r.stdout.trim().split(' ').map(Number);
  return { log_us: Math.round(log * 100) / 100, phase_us: Math.round(phase * 100) / 100, sample_us: Math.round(sample) };
}

if (process.argv.includes('--engine-child')) {
  console.log(JSON.stringify(engineHour(60)));
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
}

if (process.argv.includes('--rss-child')) {
  console.log(JSON.stringify(rss()));
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
}

/** RSS in a fresh process, so the other measurements' garbage does not count. */
function rssInChild(): ReturnType<typeof rss> | { error: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', fileURLToPath(import.meta.url), '--rss-child'], { encoding: 'utf8', cwd: REPO });
  return r.status === 0 ? JSON.parse(r.stdout.trim().split('\n').at(-1)!) : { error: r.stderr.trim().split('\n').at(-1) ?? 'failed' };
}

/** The engine_series hour in a fresh process. */
function engineInChild(): ReturnType<typeof engineHour> | { error: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', fileURLToPath(import.meta.url), '--engine-child'], { encoding: 'utf8', cwd: REPO });
  return r.status === 0 ? JSON.parse(r.stdout.trim().split('\n').at(-1)!) : { error: r.stderr.trim().split('\n').at(-1) ?? 'failed' };
}

const engine = engineInChild();
const ingest = ingestRate(1_000_000);
const overHttp = await httpRate(300_000);
const memory = rssInChild();
const py = pythonOverhead();
rmSync(root, { recursive: true, force: true });
console.log(
  JSON.stringify({
    ingest_records_per_s: ingest.records_per_s,
    ingest_goal: 500_000,
    flush_ms_for_1m_records: ingest.flush_ms,
    over_http_records_per_s: overHttp,
    python_log_us: 'log_us' in py ? py.log_us : py,
    python_phase_enter_exit_us: 'phase_us' in py ? py.phase_us : null,
    python_samples_us_per_sample: 'sample_us' in py ? py.sample_us : null,
    python_goal_us: 5,
    rss_mib: memory,
    engine_series_hour: engine,
    note: 'measured on a shared 2-core machine under load from other work; figures are noisy',
  }),
);
