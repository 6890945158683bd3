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
import { type FreshServer, getWithDigest, load, median, round, startFreshServer } from './freshServer.ts';

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

const digests = new Set<string>();
const check = (r: { status: number; digest: string }): void => {
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}`);
  digests.add(r.digest);
};

const coldEmpty: number[] = [];
const coldCached: number[] = [];
const warm: number[] = [];
const coldEmptyCpu: number[] = [];
const coldCachedCpu: number[] = [];
const warmCpu: number[] = [];
let bytes = 0;
for (let k = 0; k < repeat; k++) {
  const cacheDir = mkdtempSync(join(scratch, 'cache-'));
  // 1. cold, empty cache directory
  let s = await startServer(cacheDir);
  let cpu = s.cpuMs();
  let r = await get(path);
  coldEmptyCpu.push(s.cpuMs() - cpu);
  check(r);
  bytes = r.bytes;
  coldEmpty.push(r.ms);
  await s.stop();
  // 2. cold, the same cache directory (what the first process left in it)
  s = await startServer(cacheDir);
  cpu = s.cpuMs();
  r = await get(path);
  coldCachedCpu.push(s.cpuMs() - cpu);
  check(r);
  coldCached.push(r.ms);
  // 3. warm: the same process asked again
  if (k === repeat - 1) {
    for (let i = 0; i < warmRuns; i++) {
      cpu = s.cpuMs();
      r = await get(path);
      warmCpu.push(s.cpuMs() - cpu);
      check(r);
      warm.push(r.ms);
    }
  }
  await s.stop();
  rmSync(cacheDir, { recursive: true, force: true });
}
rmSync(scratch, { recursive: true, force: true });
if (digests.size !== 1) throw new Error(`the answers differ between modes: ${[...digests].join(', ')}`);

console.log(
  JSON.stringify({
    bench: 'tokens',
    request: path,
    total_length: longest?.total_length ?? null,
    bytes,
    digest: [...digests][0],
    cold_empty_ms: median(coldEmpty),
    cold_cached_ms: median(coldCached),
    warm_p50_ms: median(warm),
    cold_empty_cpu_ms: median(coldEmptyCpu),
    cold_cached_cpu_ms: median(coldCachedCpu),
    warm_p50_cpu_ms: median(warmCpu),
    cold_empty_all: coldEmpty.map(round),
    cold_cached_all: coldCached.map(round),
    loadavg_before: loadBefore,
    loadavg_after: load(),
  }),
);
