// Start time of `rlsight serve`: process start to the first /api/meta answer, in fresh processes.
// Usage: node --import tsx bench/start.ts --run DIR [--cache-dir DIR] [--n 5] [--port N] [--cpu-prof DIR]
// Without --cache-dir every start gets a new empty cache directory. Prints one JSON line: start_ms per
// start and their median, and the server's CPU time (user + system, all threads) up to that answer, which
// a loaded machine inflates far less than wall time.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { run: { type: 'string' }, 'cache-dir': { type: 'string' }, n: { type: 'string' }, port: { type: 'string' }, 'cpu-prof': { type: 'string' } },
});
if (!values.run) throw new Error('--run DIR is required');
const runDir = resolve(values.run);
const n = Number(values.n ?? 5);
const port = Number(values.port ?? 17789);
/** CPU time of a process so far (utime + stime from /proc), ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function once(): Promise<{ ms: number; cpu: number }> {
  const scratch = values['cache-dir'] ? undefined : mkdtempSync(join(tmpdir(), 'rlsight-start-'));
  const cacheDir = scratch ?? resolve(values['cache-dir']!);
  const nodeArgs = values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', resolve(values['cpu-prof'])] : [];
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, join(repoRoot, 'bin', 'rlsight.mjs'), 'serve', runDir, '--port', String(port), '--cache-dir', cacheDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let ms = 0;
  let cpu = 0;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/meta`);
      await res.arrayBuffer();
      if (res.status === 200) {
        ms = performance.now() - started;
        cpu = cpuMs(child.pid!);
        break;
      }
    } catch {
      /* not listening yet */
    }
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGINT');
  await exited;
    return { ms: Math.round(ms), cpu: Math.round(cpu) };
}

const runs: { ms: number; cpu: number }[] = [];
for (let i = 0; i < n; i++) runs.push(await once());
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const [loadavg] = readFileSync('/proc/loadavg', 'utf8').split(' ');
console.log(
  JSON.stringify({
    run: runDir,
    cache: values['cache-dir'] ? 'given' : 'empty',
    start_ms: runs.map((r) => r.ms),
    median_ms: median(runs.map((r) => r.ms)),
    cpu_ms: runs.map((r) => r.cpu),
    median_cpu_ms: median(runs.map((r) => r.cpu)),
    load_average: Number(loadavg),
  }),
);
