// Collector and producer costs; prints one JSON line.
//   node --import tsx bench/collect.ts
// ingest_records_per_s: gpu_util lines through Collector.ingest (check + encode + hold) and the
//   flush that appends them, per CPU second of the main thread (one core); over_http (wall time)
//   adds loopback HTTP batches of 1,000 lines.
// python_*_us: rlsight client CPU time per call in the training thread (the sender thread idle).
// rss_mib: collector process RSS before, holding a 10x burst (10 x 1,024 GPUs x one 5 s flush
//   interval of 1 Hz samples, unflushed), and holding a full 500,000-record buffer.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Collector } from '../src/collect/collector.ts';
import { startCollectorService } from '../src/collect/service.ts';
import { gpuUtilLine } from '../src/formats/dashboard/encode.ts';

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

function ingestRate(n: number): { records_per_s: number; flush_ms: number } {
  const c = new Collector({ dashboardDir: join(root, `ingest${n}`), bufferCap: n + 1, log: () => {} });
  const bodies = batches(n, 1000);
  // CPU time, not wall time: on a loaded machine the process is often descheduled
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const t0 = cpu();
  for (const b of bodies) c.ingest('gpu_util', b);
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

function pythonOverhead(): { log_us: number; phase_us: number } | { error: string } {
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
print(log_us, phase_us)
`;
  const r = spawnSync('python3', ['-c', script], { encoding: 'utf8' });
  if (r.status !== 0) return { error: r.stderr.trim().split('\n').at(-1) ?? 'python3 failed' };
  const [log, phase] = r.stdout.trim().split(' ').map(Number);
  return { log_us: Math.round(log * 100) / 100, phase_us: Math.round(phase * 100) / 100 };
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
    python_goal_us: 5,
    rss_mib: memory,
    note: 'measured on a shared 2-core machine under load from other work; figures are noisy',
  }),
);
