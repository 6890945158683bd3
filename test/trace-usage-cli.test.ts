// `rlsight trace` refuses a bad --out and a directory for FILE.pt as the exports refuse theirs: usage errors
// (exit 2) naming what is wrong, before the dump is read; never a raw errno, never a write into the run.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ensureCliBuilt, ensureTracePageBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { fixturePath } from './support/fixtures.ts';

ensureCliBuilt();
before(ensureTracePageBuilt);

const tmp = mkdtempSync(join(tmpdir(), 'rlsight-trace-usage-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
// a copy: a failed check must not leave anything in the fixture
const run = join(tmp, 'run');
cpSync(fixturePath('slime-trace'), run, { recursive: true, filter: (p) => !p.includes('golden') && !p.includes('decoded') });
const dump = join(run, 'rollout_data', '0.pt');

function trace(...args: string[]) {
  return spawnSync(process.execPath, [RLSIGHT_BIN, 'trace', ...args], { encoding: 'utf8', timeout: 60_000 });
}

test('--out naming a file, under a file, or inside the run is a usage error naming --out', () => {
  const file = join(tmp, 'afile');
  writeFileSync(file, 'x');
  const before = readdirSync(join(run, 'rollout_data')).sort();
  for (const [out, said] of [
    [file, /^rlsight: --out: .*afile is a file; give a directory/],
    [join(file, 'sub'), /^rlsight: --out: .*afile is a file, so .*afile\/sub cannot be made under it/],
    // the exports' words: a run is read, never written (slime's DIR/rollout_data/N.pt: the run is DIR)
    [join(run, 'x'), /^rlsight: --out: .*run\/x is inside the run directory .*run; a run is read, never written/],
    [join(run, 'rollout_data'), /is inside the run directory .*run; a run is read, never written/],
  ] as [string, RegExp][]) {
    const r = trace(dump, '--no-serve', '--out', out);
    assert.equal(r.status, 2, `${out}: ${r.stderr}`);
    assert.match(r.stderr, said);
    assert.doesNotMatch(r.stderr, /EEXIST|ENOTDIR/);
  }
  assert.ok(!existsSync(join(run, 'x')));
  assert.deepEqual(readdirSync(join(run, 'rollout_data')).sort(), before, 'nothing written beside the dump');
  // a dump's own folder is its run when it is not slime's rollout_data/
  const loose = join(tmp, 'loose');
  cpSync(dump, join(loose, 'rollout_0.pt'));
  const beside = trace(join(loose, 'rollout_0.pt'), '--no-serve', '--out', join(loose, 'out'));
  assert.equal(beside.status, 2, beside.stderr);
  assert.match(beside.stderr, /--out: .*loose\/out is inside the run directory .*loose; a run is read, never written/);
  // and outside the run it writes
  const ok = trace(dump, '--no-serve', '--out', join(tmp, 'out'));
  assert.equal(ok.status, 0, ok.stderr);
  assert.deepEqual(readdirSync(join(tmp, 'out')).sort(), ['0.trace.html', '0.trace_timeline_cache.json']);
});

test('a directory for FILE.pt is a usage error that names the dump files it holds', () => {
  const r = trace(join(run, 'rollout_data'), '--no-serve');
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^rlsight: trace: .*rollout_data is a directory; give one rollout dump file \(FILE\.pt\): it holds 0\.pt, 1\.pt, eval_0\.pt/);
  assert.doesNotMatch(r.stderr, /skipped/);
  const top = trace(run, '--no-serve');
  assert.equal(top.status, 2, top.stderr);
  assert.match(top.stderr, /it holds rollout_data\/0\.pt, rollout_data\/1\.pt, rollout_data\/eval_0\.pt/);
  const empty = join(tmp, 'empty');
  mkdirSync(empty);
  writeFileSync(join(empty, 'notes.txt'), 'x');
  const none = trace(empty, '--no-serve');
  assert.equal(none.status, 2, none.stderr);
  assert.match(none.stderr, /empty is a directory; give one rollout dump file \(FILE\.pt\): it holds no \.pt file/);
});
