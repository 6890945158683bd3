// What the fresh-process benches share: a server process over a run (resolved once it prints its URL),
// its CPU time and memory from /proc, one GET with a digest of the body, and small figure helpers.
import { type ChildProcess, spawn } from 'node:child_process';
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
  cpuMs(): number;
  mib(key: string): number;
  stop(): Promise<void>;
}

/** `bin serve --dump-details runDir` on `port` with `cacheDir`, resolved once it prints its URL (no request made). */
export async function startFreshServer(opts: { bin: string; runDir: string; port: number; cacheDir: string; nodeFlags?: string[]; stopSignal?: NodeJS.Signals }): Promise<FreshServer> {
  const child: ChildProcess = spawn(
    process.execPath,
    [...(opts.nodeFlags ?? []), opts.bin, 'serve', '--dump-details', opts.runDir, '--port', String(opts.port), '--cache-dir', opts.cacheDir],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (/serving http:\/\//.test(out)) ok();
    });
    child.once('exit', (code) => fail(new Error(`rlsight serve exited with ${code}: ${out}`)));
  });
  return {
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
