// A train step's summary asked first in a fresh server process: `/api/rollout/{id}/summary` of the run's
// last train step (or `--rollout N`), cold with an empty --cache-dir (the rollout dump decoded and every
// rank file joined), cold with the cache directory an earlier process left, and warm (the same process
// asked again). Usage: node --import tsx bench/summary.ts --run DIR [--rollout N] [--repeat N] [--warm N]
// [--port N] [--bin PATH] [--cpu-prof DIR] (`--bin`: another build's bin/rlsight.mjs; `--cpu-prof`: the
// cold empty-cache servers write V8 CPU profiles there). Each cold figure is the median over `--repeat`
// fresh processes (default 3). Prints one JSON line: times, the server's CPU time over the request (every
// thread, Linux schedstat), its RSS when idle before the request and its peak RSS (VmHWM) after it, the
// load average before and after, and a digest of the answer (equal in every mode, or the bench fails).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { coldWarmRounds, type FreshServer, getWithDigest, load, startFreshServer } from './freshServer.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    run: { type: 'string' },
    rollout: { type: 'string' },
    repeat: { type: 'string' },
    warm: { type: 'string' },
    port: { type: 'string' },
    bin: { type: 'string' },
    'cpu-prof': { type: 'string' },
  },
});
if (!values.run) throw new Error('--run DIR is required (a miles run with train dumps)');
const runDir = resolve(values.run);
const repeat = Number(values.repeat ?? 3);
const warmRuns = Number(values.warm ?? 10);
const port = Number(values.port ?? 17811);
const base = `http://127.0.0.1:${port}`;
const bin = resolve(values.bin ?? join(repoRoot, 'bin', 'rlsight.mjs'));
const profDir = values['cpu-prof'] ? resolve(values['cpu-prof']) : null;
/** A fresh server process over the run (the cold empty-cache ones profiled with --cpu-prof). */
const startServer = (cacheDir: string, profile = false): Promise<FreshServer> =>
  startFreshServer({ bin, runDir, port, cacheDir, nodeFlags: profile && profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [], stopSignal: profile && profDir ? 'SIGINT' : 'SIGTERM' });
const get = (path: string) => getWithDigest(base, path);

const scratch = mkdtempSync(join(tmpdir(), 'rlsight-bench-summary-'));
const loadBefore = load();

let rid = values.rollout === undefined ? -1 : Number(values.rollout);
if (rid < 0) {
  // The step, found by a probe process that asks only for the run's ids.
  const probeDir = mkdtempSync(join(scratch, 'probe-'));
  const probe = await startServer(probeDir);
  const meta = (await (await fetch(`${base}/api/meta`)).json()) as { rollout_ids: { train: number[] } };
  rid = meta.rollout_ids.train.at(-1) ?? 0;
  await probe.stop();
  rmSync(probeDir, { recursive: true, force: true });
}
const path = `/api/rollout/${rid}/summary`;

const rounds = await coldWarmRounds({
  start: (cacheDir, profileFirst) => startServer(cacheDir, profileFirst),
  get,
  path,
  repeat,
  warmRuns,
  newCacheDir: () => mkdtempSync(join(scratch, 'cache-')),
  removeDir: (dir) => rmSync(dir, { recursive: true, force: true }),
});
rmSync(scratch, { recursive: true, force: true });
console.log(JSON.stringify({ bench: 'summary', ...rounds, loadavg_before: loadBefore, loadavg_after: load() }));
