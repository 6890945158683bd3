// What the fresh-process benches share: a server process over a run (resolved once it prints its URL),
// its CPU time and memory from /proc, one GET with a digest of the body, and small figure helpers.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

export const round = (x: number): number => Math.round(x * 10) / 10;
export const median = (xs: number[]): number => round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);
export const load = (): number[] => loadavg().map((x) => Math.round(x * 100) / 100);

/** CPU time (ms) every thread of process `pid` has run so far, from /proc (0 where there is none). */
export function cpuMs(pid: number | undefined): number {
  let ns = 0;
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return 0;
  }
  return ns / 1e6;
}

/** A `/proc/{pid}/status` figure in MiB (VmRSS, VmHWM). */
export function statusMiB(pid: number | undefined, key: string): number {
  try {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

export interface FreshServer {
  readonly pid: number;
  cpuMs(): number;
  mib(key: string): number;
  stop(): Promise<void>;
}

/** The variables the `#!/usr/bin/env -S NAME=VALUE … node` line of `bin` sets. */
function shebangEnv(bin: string): Record<string, string> {
  const first = readFileSync(bin, 'utf8').split('\n', 1)[0];
  const m = /^#!\S*env\s+-S\s+(.*)\s+node\s*$/.exec(first);
  return Object.fromEntries((m?.[1].split(/\s+/) ?? []).map((kv) => kv.split('=', 2) as [string, string]).filter((kv) => kv.length === 2));
}

/**
 * `bin args` started as a shell starts the installed command: through its `#!` line and the environment that
 * line sets. With node flags (a profile, which NODE_OPTIONS does not take) node runs `bin` itself, given
 * that environment.
 */
export function spawnCommand(bin: string, args: string[], options: SpawnOptions & { nodeFlags?: string[] } = {}): ChildProcess {
  const { nodeFlags = [], ...rest } = options;
  if (nodeFlags.length === 0) return spawn(bin, args, rest);
  return spawn(process.execPath, [...nodeFlags, bin, ...args], { ...rest, env: { ...(rest.env ?? process.env), ...shebangEnv(bin) } });
}

/** `bin serve --dump-details runDir` on `port` with `cacheDir`, resolved once it prints its URL (no request made). */
export async function startFreshServer(opts: { bin: string; runDir: string; port: number; cacheDir: string; nodeFlags?: string[]; stopSignal?: NodeJS.Signals }): Promise<FreshServer> {
  const child = spawnCommand(opts.bin, ['serve', '--dump-details', opts.runDir, '--port', String(opts.port), '--cache-dir', opts.cacheDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
    nodeFlags: opts.nodeFlags,
  });
  await new Promise<void>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (/serving http:\/\//.test(out)) ok();
    });
    child.once('exit', (code) => fail(new Error(`rlsight serve exited with ${code}: ${out}`)));
  });
  return {
    pid: child.pid!,
    cpuMs: () => cpuMs(child.pid),
    mib: (key) => statusMiB(child.pid, key),
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(opts.stopSignal ?? 'SIGTERM');
      await exited;
    },
  };
}

/** One GET: wall time, status, body size and a digest of the body (to check every mode answers alike). */
export async function getWithDigest(base: string, path: string): Promise<{ ms: number; status: number; digest: string; bytes: number }> {
  const t = performance.now();
  const res = await fetch(base + path);
  const body = Buffer.from(await res.arrayBuffer());
  const ms = performance.now() - t;
  return { ms, status: res.status, bytes: body.byteLength, digest: createHash('sha256').update(body).digest('hex').slice(0, 16) };
}

/**
 * `repeat` rounds of one request: cold in a fresh process with an empty cache directory, cold in a fresh
 * process over what that one left, and (last round) warm in the second process. Each figure's median, the
 * server's CPU time over the request (every thread), its idle and peak RSS; throws if any answer is not a
 * 200 or the modes' answers differ. `profileFirst`: `start` is told which process is the empty-cache one (a bench may profile it).
 */
export async function coldWarmRounds(opts: {
  start: (cacheDir: string, profileFirst: boolean) => Promise<FreshServer>;
  get: (path: string) => ReturnType<typeof getWithDigest>;
  path: string;
  repeat: number;
  warmRuns: number;
  newCacheDir: () => string;
  removeDir: (dir: string) => void;
}): Promise<Record<string, unknown>> {
  const digests = new Set<string>();
  const ms = { coldEmpty: [] as number[], coldCached: [] as number[], warm: [] as number[] };
  const cpu = { coldEmpty: [] as number[], coldCached: [] as number[], warm: [] as number[] };
  const idleRss: number[] = [];
  const peak = { coldEmpty: [] as number[], coldCached: [] as number[] };
  let bytes = 0;
  const ask = async (s: FreshServer, mode: 'coldEmpty' | 'coldCached' | 'warm'): Promise<void> => {
    const c = s.cpuMs();
    const r = await opts.get(opts.path);
    cpu[mode].push(s.cpuMs() - c);
    if (mode !== 'warm') peak[mode].push(s.mib('VmHWM'));
    if (r.status !== 200) throw new Error(`${opts.path} answered ${r.status}`);
    digests.add(r.digest);
    bytes = r.bytes;
    ms[mode].push(r.ms);
  };
  for (let k = 0; k < opts.repeat; k++) {
    const cacheDir = opts.newCacheDir();
    let s = await opts.start(cacheDir, true);
    idleRss.push(s.mib('VmRSS'));
    await ask(s, 'coldEmpty');
    await s.stop();
    s = await opts.start(cacheDir, false);
    await ask(s, 'coldCached');
    if (k === opts.repeat - 1) for (let i = 0; i < opts.warmRuns; i++) await ask(s, 'warm');
    await s.stop();
    opts.removeDir(cacheDir);
  }
  if (digests.size !== 1) throw new Error(`the answers differ between modes: ${[...digests].join(', ')}`);
  return {
    request: opts.path,
    bytes,
    digest: [...digests][0],
    cold_empty_ms: median(ms.coldEmpty),
    cold_cached_ms: median(ms.coldCached),
    warm_p50_ms: median(ms.warm),
    cold_empty_cpu_ms: median(cpu.coldEmpty),
    cold_cached_cpu_ms: median(cpu.coldCached),
    warm_p50_cpu_ms: median(cpu.warm),
    idle_rss_mib: median(idleRss),
    cold_empty_peak_rss_mib: median(peak.coldEmpty),
    cold_cached_peak_rss_mib: median(peak.coldCached),
    cold_empty_all: ms.coldEmpty.map(round),
    cold_cached_all: ms.coldCached.map(round),
  };
}
