// `health`, `search` and `export` take the run as `serve` does, slime's --save-debug-rollout-data files
// included (one FILE.pt or one quoted GLOB); they answer exactly what the same dumps in slime's
// `--dump-details` layout give, and a folder holding such files is not called one without rollout dumps.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { ageTree, fixturePath } from './support/fixtures.ts';

ensureCliBuilt();

const tmp = mkdtempSync(join(tmpdir(), 'rlsight-dump-files-cmds-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

// slime's `--save-debug-rollout-data dbg/rollout_{rollout_id}.pt` names, for the slime-trace fixture's dumps
const dbg = join(tmp, 'dbg');
mkdirSync(dbg);
const data = fixturePath('slime-trace', 'rollout_data');
copyFileSync(join(data, '0.pt'), join(dbg, 'rollout_0.pt'));
copyFileSync(join(data, '1.pt'), join(dbg, 'rollout_1.pt'));
copyFileSync(join(data, 'eval_0.pt'), join(dbg, 'rollout_eval_0.pt'));
ageTree(dbg);
const glob = join(dbg, 'rollout_*.pt');
const layout = fixturePath('slime-trace');

function rlsight(...args: string[]) {
  return spawnSync(process.execPath, [RLSIGHT_BIN, ...args], { encoding: 'utf8', timeout: 120_000 });
}

test('health, search and export answer for a quoted GLOB what they answer for the same dumps as a run directory', () => {
  const health = rlsight('health', glob, '--json');
  assert.equal(health.status, 0, health.stderr);
  assert.equal(health.stdout, rlsight('health', layout, '--json').stdout);
  const search = rlsight('search', glob, 'Natalia');
  assert.equal(search.status, 0, search.stderr);
  assert.equal(search.stdout, rlsight('search', layout, 'Natalia').stdout);
  assert.ok(search.stdout.split('\n').length > 2, search.stdout);
  const csv = join(tmp, 'glob.csv');
  const exported = rlsight('export', 'metrics', glob, '--out', csv);
  assert.equal(exported.status, 0, exported.stderr);
  assert.equal(rlsight('export', 'metrics', layout, '--out', join(tmp, 'layout.csv')).status, 0);
  assert.equal(readFileSync(csv, 'utf8'), readFileSync(join(tmp, 'layout.csv'), 'utf8'));
  // one file is a run of one dump
  const one = rlsight('export', 'rollout', join(dbg, 'rollout_1.pt'), '--step', '1', '--out', join(tmp, 'r.csv'));
  assert.equal(one.status, 0, one.stderr);
  assert.match(one.stdout, /wrote 12 samples of step 1/);
});

test('the files\' folder is the run: --out inside it is refused as inside any run', () => {
  const r = rlsight('export', 'metrics', glob, '--out', join(dbg, 'm.csv'));
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /--out: .*dbg\/m\.csv is inside the run directory .*dbg; a run is read, never written/);
});

test('a folder of dump files is told what it holds and what to pass; a bad GLOB or FILE is a usage error', () => {
  const folder = rlsight('health', dbg);
  assert.equal(folder.status, 2, folder.stderr);
  assert.doesNotMatch(folder.stderr, /holds no rollout dumps/);
  assert.match(folder.stderr, /health: .*dbg is not a run directory \(no rollout_data\/ or dashboard\/ inside\) but holds \.pt files \(rollout_0\.pt, rollout_1\.pt, rollout_eval_0\.pt\)/);
  assert.ok(folder.stderr.includes(`'${glob}'`), folder.stderr);
  for (const [args, said] of [
    [['health', join(dbg, 'nomatch*.pt')], /health: .*nomatch\*\.pt: no file matches/],
    [['search', join(dbg, 'rollout_9.pt'), 'x'], /search: .*rollout_9\.pt: no such file/],
    [['export', 'metrics', join(tmp, 'nodir', '*.pt'), '--out', join(tmp, 'x.csv')], /export metrics: .*nodir\/\*\.pt: no such folder/],
    [['health', '--dump-details', glob], /--dump-details: .*rollout_\*\.pt is not a directory; slime dump files \(FILE\.pt or a quoted GLOB\) are given on their own, without --dump-details/],
    [['health', glob, '--cache-dir', join(tmp, 'cache')], /--cache-dir: not used with slime dump files/],
  ] as [string[], RegExp][]) {
    const r = rlsight(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, said);
  }
  // an unquoted glob, expanded by the shell: search would take the other files for its QUERY
  const expanded = rlsight('search', join(dbg, 'rollout_0.pt'), join(dbg, 'rollout_1.pt'), 'Natalia');
  assert.equal(expanded.status, 2, expanded.stderr);
  assert.match(expanded.stderr, /search: give slime dump files as one quoted GLOB \('dir\/rollout_\*\.pt'\), not several files/);
  // a folder with nothing of a run still says so
  const empty = join(tmp, 'empty');
  mkdirSync(empty);
  const none = rlsight('health', empty);
  assert.equal(none.status, 2);
  assert.match(none.stderr, /not a run: .*empty holds no rollout dumps or telemetry/);
});
