// A team on one server: N concurrent clients (default 16), each replaying the request sequence
// (bench/requestSequence.ts: bench/server.ts's families and what a viewer's screens ask beside them) in its
// own shuffled order, one request at a time, reading the raw bytes (gzip accepted, never decoded, so the
// clients' own CPU stays out of the figures). The warm-up alone in a fresh server with an empty --cache-dir
// (its time); the clients at once on another such server (during the warm-up: its time with clients); then
// a fresh server over the cache that warm-up filled, every request asked once, and the clients again (warm).
// Per round: statuses, p50/p90/p99/max per family and overall, peak RSS of the server process.
// Usage: node --import tsx bench/load.ts [--run DIR] [--clients N] [--port N] [--seed N] [--bin PATH]
// Without --run it generates the demo run (128 GPUs) into a temp folder first. Prints one JSON line.
import { request, Agent } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type FreshServer, load, round, startFreshServer } from './freshServer.ts';
import { type Request, resolveSequence } from './requestSequence.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { run: { type: 'string' }, clients: { type: 'string' }, port: { type: 'string' }, seed: { type: 'string' }, bin: { type: 'string' } },
});
const clients = Number(values.clients ?? 16);
const port = Number(values.port ?? 17811);
const seed = Number(values.seed ?? 1);
const base = `http://127.0.0.1:${port}`;
const bin = resolve(values.bin ?? join(repoRoot, 'bin', 'rlsight.mjs'));
/** A request not answered within this long counts as an error (the bench must end). */
const REQUEST_TIMEOUT_MS = 600_000;

const scratch = mkdtempSync(join(tmpdir(), 'rlsight-bench-load-'));
let runDir = values.run ? resolve(values.run) : '';
if (!runDir) {
  runDir = join(scratch, 'run');
  const { generateDemoRun } = await import('../src/demo/index.ts');
  await generateDemoRun(runDir, { large: true });
}
let current: FreshServer | null = null;
const startServer = async (cacheDir = mkdtempSync(join(scratch, 'cache-'))): Promise<FreshServer> => (current = await startFreshServer({ bin, runDir, port, cacheDir }));
// a bench that fails part way leaves no server behind
process.on('exit', () => {
  if (current !== null) process.kill(current.pid);
});

interface Outcome {
  family: string;
  /** HTTP status, or 0 for a connection error or a timeout. */
  status: number;
  ms: number;
  bytes: number;
  /** What failed when status is 0. */
  error?: string;
}

/** One GET on the client's own connection: time to the body's last raw byte. */
function ask(agent: Agent, family: string, r: Request): Promise<Outcome> {
  const t = performance.now();
  return new Promise((done) => {
    const failed = (err: Error): void => done({ family, status: 0, ms: performance.now() - t, bytes: 0, error: err.message });
    const req = request(base + r.path, { agent, headers: { 'accept-encoding': 'gzip', ...(r.accept ? { accept: r.accept } : {}) } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.byteLength));
      res.on('error', failed);
      res.on('end', () => done({ family, status: res.statusCode ?? 0, ms: performance.now() - t, bytes }));
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy());
    req.on('error', failed);
    req.end();
  });
}

/** A small seeded generator (mulberry32), so each client's order is the same from run to run. */
function random(s: number): () => number {
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(xs: readonly T[], rnd: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** Every client replays the sequence in its own order, all at once; the outcomes of all. */
async function replay(sequence: Record<string, Request>, n: number): Promise<Outcome[]> {
  const names = Object.keys(sequence);
  const all = await Promise.all(
    Array.from({ length: n }, async (_, k) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const out: Outcome[] = [];
      for (const name of shuffled(names, random(seed * 1000 + k))) out.push(await ask(agent, name, sequence[name]));
      agent.destroy();
      return out;
    }),
  );
  return all.flat();
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
function spread(ms: number[]): { n: number; p50: number; p90: number; p99: number; max: number } {
  const s = [...ms].sort((a, b) => a - b);
  return { n: s.length, p50: round(quantile(s, 0.5)), p90: round(quantile(s, 0.9)), p99: round(quantile(s, 0.99)), max: round(s[s.length - 1]) };
}

function figures(outcomes: Outcome[]): Record<string, unknown> {
  const statuses: Record<string, number> = {};
  for (const o of outcomes) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
  const families: Record<string, ReturnType<typeof spread> & { bytes: number }> = {};
  for (const name of [...new Set(outcomes.map((o) => o.family))]) {
    const mine = outcomes.filter((o) => o.family === name);
    families[name] = { ...spread(mine.map((o) => o.ms)), bytes: Math.max(...mine.map((o) => o.bytes)) };
  }
  const errors = [...new Set(outcomes.flatMap((o) => (o.error ? [`${o.family}: ${o.error}`] : [])))];
  return { requests: outcomes.length, statuses, ...(errors.length ? { errors } : {}), overall_ms: spread(outcomes.map((o) => o.ms)), families_ms: families };
}

/** The warm-up's progress the run header tells (null once every hour is done); a new connection each time. */
function warmUpProgress(): Promise<{ hours_done: number; hours_total: number } | null> {
  return new Promise((done, fail) => {
    const req = request(`${base}/api/meta`, { agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('error', fail);
      res.on('end', () => done((JSON.parse(text) as { warmup?: { hours_done: number; hours_total: number } }).warmup ?? null));
    });
    req.on('error', fail);
    req.end();
  });
}

const warmingUp = async (): Promise<boolean> => (await warmUpProgress()) !== null;

/** Ms from `since` until the server says its warm-up finished (asked every 250 ms). */
async function warmUpEnd(since: number): Promise<number> {
  while (await warmingUp()) await new Promise((r) => setTimeout(r, 250));
  return round(performance.now() - since);
}

// 1. the warm-up alone in a fresh server; the sequence is resolved there once it finished
let started = performance.now();
let server = await startServer();
const warmUpAloneMs = await warmUpEnd(started);
const { reference, viewer } = await resolveSequence(base);
const sequence = { ...reference, ...viewer };
await server.stop();
current = null;

// 2. the clients at once on a fresh server, during its warm-up
const loadBefore = load();
started = performance.now();
const cacheDir = mkdtempSync(join(scratch, 'cache-'));
server = await startServer(cacheDir);
const warmUpWithClients = warmUpEnd(started);
const during = await replay(sequence, clients);
// where the warm-up stood when the last client was answered
const clientsDone = { ms: round(performance.now() - started), warm_up: await warmUpProgress() };
const duringPeak = server.mib('VmHWM');
const warmUpWithClientsMs = await warmUpWithClients;
const loadDuring = load();

// 3. warm: a fresh server over the cache the warm-up filled, every request asked once, then the clients at once
await server.stop();
server = await startServer(cacheDir);
await warmUpEnd(performance.now());
for (const name of Object.keys(sequence)) await ask(new Agent(), name, sequence[name]);
const warm = await replay(sequence, clients);
const warmPeak = server.mib('VmHWM');
const loadWarm = load();
await server.stop();
current = null;
rmSync(scratch, { recursive: true, force: true });

console.log(
  JSON.stringify({
    bench: 'load',
    run: values.run ? runDir : 'demo --large',
    clients,
    requests_per_client: Object.keys(sequence).length,
    note: 'ms to the last raw byte (gzip accepted, not decoded); each client one request at a time in its own shuffled order',
    load_average: { before: loadBefore, after_warm_up_round: loadDuring, after_warm_round: loadWarm },
    warm_up_ms: { alone: warmUpAloneMs, with_clients: warmUpWithClientsMs },
    clients_done_during_warm_up: clientsDone,
    warm: { ...figures(warm), peak_rss_mib: warmPeak },
    during_warm_up: { ...figures(during), peak_rss_mib: duringPeak },
  }),
);
