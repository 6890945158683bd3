// One sample's tokens asked first in a fresh server process: the longest sample of the run's last train
// step (as bench/server.ts picks it), cold with an empty --cache-dir, cold with the cache directory an
// earlier process left (that process asked only for these tokens), and warm (the same process asked again).
// Usage: node --import tsx bench/tokens.ts --run DIR [--repeat N] [--warm N] [--port N] [--bin PATH]
// (`--bin`: another build's bin/rlsight.mjs, to compare two builds under the same load).
// Each cold figure is the median over `--repeat` fresh processes (default 3). Prints one JSON line, with
// the load average before and after and a digest of the answer (equal in every mode, or the bench fails).
// `*_cpu_ms` is the CPU time the server's threads spent meanwhile (Linux schedstat): on a machine shared
// with other work it moves far less than the wall-clock figures.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { coldWarmRounds, type FreshServer, getWithDigest, load, startFreshServer } from './freshServer.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { run: { type: 'string' }, repeat: { type: 'string' }, warm: { type: 'string' }, port: { type: 'string' }, bin: { type: 'string' } },
});
if (!values.run) throw new Error('--run DIR is required (a miles run with train dumps and a parquet mirror)');
const runDir = resolve(values.run);
const repeat = Number(values.repeat ?? 3);
const warmRuns = Number(values.warm ?? 10);
const port = Number(values.port ?? 17799);
const base = `http://127.0.0.1:${port}`;
const bin = resolve(values.bin ?? join(repoRoot, 'bin', 'rlsight.mjs'));
/** A fresh server process over the run. */
const startServer = (cacheDir: string): Promise<FreshServer> => startFreshServer({ bin, runDir, port, cacheDir });
const get = (path: string) => getWithDigest(base, path);

const scratch = mkdtempSync(join(tmpdir(), 'rlsight-bench-tokens-'));
const loadBefore = load();

// The request, resolved by a probe process over a cache directory of its own (thrown away).
const probeDir = mkdtempSync(join(scratch, 'probe-'));
const probe = await startServer(probeDir);
const meta = (await (await fetch(`${base}/api/meta`)).json()) as { rollout_ids: { train: number[] } };
const rid = meta.rollout_ids.train.at(-1) ?? 0;
const summary = (await (await fetch(`${base}/api/rollout/${rid}/summary`)).json()) as { rows?: { sample_index: number; total_length: number }[] };
const longest = [...(summary.rows ?? [])].sort((a, b) => (b.total_length ?? 0) - (a.total_length ?? 0))[0];
const path = `/api/rollout/${rid}/sample/${longest?.sample_index ?? 0}/tokens`;
await probe.stop();
rmSync(probeDir, { recursive: true, force: true });

const rounds = await coldWarmRounds({
  start: (cacheDir) => startServer(cacheDir),
  get,
  path,
  repeat,
  warmRuns,
  newCacheDir: () => mkdtempSync(join(scratch, 'cache-')),
  removeDir: (dir) => rmSync(dir, { recursive: true, force: true }),
});
rmSync(scratch, { recursive: true, force: true });
console.log(JSON.stringify({ bench: 'tokens', ...rounds, total_length: longest?.total_length ?? null, loadavg_before: loadBefore, loadavg_after: load() }));
