// Server latency of the reference's request sequence: cold in a fresh process with an empty cache
// directory, cold in a fresh process with a warm one (every hour persisted by an earlier process), and
// warm (the same process asked again); start to the first /api/meta and peak RSS over the sequence.
// Each time is to the last byte of the body as sent (gzip when the server compresses it, as a browser
// asks); `warm_decoded_p50_ms` adds the client's gunzip. The `*_columns` families ask for the binary
// frame the app reads; the others get the JSON scripts get. A cold answer given while the warm-up still reads
// the history is partial: its `coverage` (hours read/all) is listed beside it. `warm_up_empty_cache`: a fresh
// process on an empty cache asked nothing else, until every hour is read, and its CPU time.
// Usage: node --import tsx bench/server.ts [--run DIR] [--large] [--warm N] [--port N] [--families a,b]
// Without --run it generates the demo run (`--large`: 128 GPUs) into a temp folder first. Prints one JSON line.
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuMs, spawnCommand } from './freshServer.ts';
import { resolveSequence } from './requestSequence.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { run: { type: 'string' }, large: { type: 'boolean' }, warm: { type: 'string' }, port: { type: 'string' }, families: { type: 'string' } },
});
const warmRuns = Number(values.warm ?? 10);
const port = Number(values.port ?? 17788);

const scratch = mkdtempSync(join(tmpdir(), 'rlsight-bench-'));
let runDir = values.run ? resolve(values.run) : '';
if (!runDir) {
  runDir = join(scratch, 'run');
  const { generateDemoRun } = await import('../src/demo/index.ts');
  await generateDemoRun(runDir, { large: values.large ?? false });
}

const base = `http://127.0.0.1:${port}`;
const round = (x: number): number => Math.round(x * 10) / 10;
const median = (xs: number[]): number => round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);

interface Server {
  firstAnswerMs: number;
  /** Peak RSS so far (VmHWM), MiB. */
  peakMiB(): number;
  /** CPU time of every thread so far, ms. */
  cpuMs(): number;
  stop(): Promise<void>;
}

/** A fresh server process over the run; resolves once /api/meta answers. */
async function startServer(cacheDir: string): Promise<Server> {
  const started = performance.now();
  const child: ChildProcess = spawnCommand(join(repoRoot, 'bin', 'rlsight.mjs'), ['serve', '--dump-details', runDir, '--port', String(port), '--cache-dir', cacheDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    try {
      if ((await get('/api/meta')).status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const firstAnswerMs = performance.now() - started;
  const peakMiB = (): number => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      return m ? Number(m[1]) / 1024 : 0;
    } catch {
      return 0;
    }
  };
  const stop = async (): Promise<void> => {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return { firstAnswerMs, peakMiB, cpuMs: () => cpuMs(child.pid), stop };
}

/** One GET: time to the body's last byte as sent, and that plus the client's gunzip. */
function get(path: string, accept?: string): Promise<{ ms: number; decodedMs: number; status: number; bytes: number; wireBytes: number; coverage: string | null }> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(base + path, { headers: { 'accept-encoding': 'gzip', ...(accept ? { accept } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const ms = performance.now() - t;
        const wire = Buffer.concat(chunks);
        const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(wire) : wire;
        const coverage = res.headers['x-rlsight-coverage'];
        resolve({ ms, decodedMs: performance.now() - t, status: res.statusCode ?? 0, bytes: body.byteLength, wireBytes: wire.byteLength, coverage: typeof coverage === 'string' ? coverage : null });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function json(path: string): Promise<any> {
  return (await fetch(base + path)).json();
}

// The request sequence, resolved against the run by a first process.
const probeCache = mkdtempSync(join(scratch, 'probe-'));
const probe = await startServer(probeCache);
const families = (await resolveSequence(base)).reference;
await probe.stop();
rmSync(probeCache, { recursive: true, force: true });

const picked = values.families ? values.families.split(',') : Object.keys(families);
/** The frame for the `*_columns` families, JSON for the rest. */
const fetchFamily = (name: string) => get(families[name].path, families[name].accept);

/** One process runs the whole sequence in order: its start, each answer cold, and its peak RSS. */
async function sequence(cacheDir: string): Promise<{ first_answer_ms: number; peak_rss_mib: number; cold_ms: Record<string, number> }> {
  const s = await startServer(cacheDir);
  const cold: Record<string, number> = {};
  for (const name of picked) cold[name] = round((await fetchFamily(name)).ms);
  const out = { first_answer_ms: round(s.firstAnswerMs), peak_rss_mib: round(s.peakMiB()), cold_ms: cold };
  await s.stop();
  return out;
}

/** Waits until the server's background warm-up has persisted every hour. */
async function warmUpDone(): Promise<number> {
  const t = performance.now();
  while ((await json('/api/meta')).warmup) await new Promise((r) => setTimeout(r, 500));
  return performance.now() - t;
}

// 1. cold, empty cache: each answer in a fresh process with a new cache directory
const coldEmpty: Record<string, { status: number; bytes: number; wireBytes: number; ms: number; coverage: string | null }> = {};
const startEmpty: number[] = [];
for (const name of picked) {
  const dir = mkdtempSync(join(scratch, 'empty-'));
  const s = await startServer(dir);
  startEmpty.push(s.firstAnswerMs);
  const r = await fetchFamily(name);
  coldEmpty[name] = { status: r.status, bytes: r.bytes, wireBytes: r.wireBytes, ms: round(r.ms), coverage: r.coverage };
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
}

// 2. a fresh process on an empty cache, asked nothing but its progress: every hour read, and the CPU it took
const idleCache = mkdtempSync(join(scratch, 'idle-'));
const idle = await startServer(idleCache);
const warmUpEmptyMs = idle.firstAnswerMs + (await warmUpDone());
const warmUpCpuMs = idle.cpuMs();
await idle.stop();
rmSync(idleCache, { recursive: true, force: true });

// 3. the whole sequence in one process with an empty cache (peak RSS), then let its warm-up finish
const warmCache = mkdtempSync(join(scratch, 'cache-'));
const seqEmpty = await sequence(warmCache);
const warming = await startServer(warmCache);
const warmUpMs = await warmUpDone();
for (const name of picked) await fetchFamily(name); // the dump reader's own summary cache too
await warming.stop();

// 4. cold with the warm cache: each answer in a fresh process; then warm: the same request again
const coldCached: Record<string, number> = {};
const warm: Record<string, number> = {};
const warmDecoded: Record<string, number> = {};
const startCached: number[] = [];
for (const name of picked) {
  const s = await startServer(warmCache);
  startCached.push(s.firstAnswerMs);
  coldCached[name] = round((await fetchFamily(name)).ms);
  const times: number[] = [];
  const decoded: number[] = [];
  for (let i = 0; i < warmRuns; i++) {
    const r = await fetchFamily(name);
    times.push(r.ms);
    decoded.push(r.decodedMs);
  }
  warm[name] = median(times);
  warmDecoded[name] = median(decoded);
  await s.stop();
}
const seqCached = await sequence(warmCache);
rmSync(scratch, { recursive: true, force: true });

console.log(
  JSON.stringify({
    bench: 'server',
    run: values.run ? runDir : `demo${values.large ? ' --large' : ''}`,
    note: 'cold_empty: fresh process, empty --cache-dir; cold_cached: fresh process, every hour persisted; warm: p50 of the same request again',
    start_ms: { empty_cache: median(startEmpty), warm_cache: median(startCached) },
    peak_rss_mib: { empty_cache: seqEmpty.peak_rss_mib, warm_cache: seqCached.peak_rss_mib },
    warm_up_ms: round(warmUpMs),
    warm_up_empty_cache: { ms: round(warmUpEmptyMs), server_cpu_ms: round(warmUpCpuMs) },
    load_average: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
    table: Object.fromEntries(
      picked.map((n) => [
        n,
        { status: coldEmpty[n].status, coverage: coldEmpty[n].coverage ?? 'complete', bytes: coldEmpty[n].bytes, wire_bytes: coldEmpty[n].wireBytes, cold_empty_ms: coldEmpty[n].ms, cold_cached_ms: coldCached[n], warm_p50_ms: warm[n], warm_decoded_p50_ms: warmDecoded[n] },
      ]),
    ),
    sequence: { empty_cache: seqEmpty, warm_cache: seqCached },
  }),
);
