import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ensureTracePageBuilt } from '../../test/support/cli.ts';
import { fixturePath } from '../../test/support/fixtures.ts';
import { PyFloat } from '../formats/torch/value.ts';
import { saveTorch } from '../formats/torch/writer.ts';
import { PACKAGE_ROOT } from '../ownFiles.ts';
import { writeTraceOutputs } from './trace.ts';

const tmp = mkdtempSync(join(tmpdir(), 'rlsight-trace-cmd-'));
const CLI = join(PACKAGE_ROOT, 'src', 'cli.ts');
after(() => rmSync(tmp, { recursive: true, force: true }));
before(ensureTracePageBuilt);

function cli(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', CLI, 'trace', ...args], { cwd: PACKAGE_ROOT, encoding: 'utf8' });
}

test('rlsight trace writes the compatible cache and a self-contained page into --out, nothing beside the dump', () => {
  const dumpDir = join(tmp, 'dump');
  mkdirSync(dumpDir, { recursive: true });
  copyFileSync(fixturePath('slime-trace-legacy-pd', 'rollout_data', '1.pt'), join(dumpDir, '1.pt'));
  const out = join(tmp, 'out');
  const r = cli(join(dumpDir, '1.pt'), '--out', out, '--no-serve');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^pt: .*1\.pt \| cache: .*1\.trace_timeline_cache\.json \| html: .*1\.trace\.html \| samples: 8$/m);
  assert.deepEqual(readdirSync(dumpDir), ['1.pt']);
  const cache = JSON.parse(readFileSync(join(out, '1.trace_timeline_cache.json'), 'utf8'));
  assert.equal(cache.sample_count, 8);
  assert.equal(cache.pt_path, join(dumpDir, '1.pt'));
  const golden = JSON.parse(readFileSync(fixturePath('slime-trace-legacy-pd', 'golden', '1.trace_timeline_cache.json'), 'utf8').replace(/\bNaN\b/g, 'null'));
  assert.deepEqual(cache.rows, golden.rows);
  const html = readFileSync(join(out, '1.trace.html'), 'utf8');
  // Data inlined, no fetch of a sibling file: opens from file://.
  assert.match(html, /<script id="rlsight-trace-data" type="application\/json">\{"title":"1\.pt trace"/);
  assert.doesNotMatch(html, /fetch\(/);
  assert.equal((html.match(/<\/script>/g) ?? []).length, 2);
});

test('without --out the files go to a new temporary folder', () => {
  const r = cli(fixturePath('slime-trace', 'rollout_data', 'eval_0.pt'), '--no-serve');
  assert.equal(r.status, 0, r.stderr);
  const cache = /cache: (\S+)/.exec(r.stdout)![1];
  assert.ok(cache.startsWith(tmpdir()), cache);
  assert.ok(!existsSync(fixturePath('slime-trace', 'rollout_data', 'eval_0.trace_timeline_cache.json')));
  rmSync(join(cache, '..'), { recursive: true, force: true });
});

test('a dump whose samples carry no trace, and a file that is no dump, get a message naming the file', async () => {
  // in a folder of its own: --out may not lie in the dump's folder (its run)
  mkdirSync(join(tmp, 'untraced'));
  const untraced = join(tmp, 'untraced', 'rollout_3.pt');
  await saveTorch({ rollout_id: 3, samples: [{ index: 0, response: 'x', reward: new PyFloat(0) }] }, untraced);
  const r = cli(untraced, '--no-serve', '--out', join(tmp, 'o2'));
  assert.equal(r.status, 1);
  assert.match(r.stderr, /rollout_3\.pt: none of its 1 samples carries a trace/);
  await assert.rejects(writeTraceOutputs(untraced, join(tmp, 'o3')), /none of its 1 samples/);
  const missing = cli(join(tmp, 'nope.pt'), '--no-serve');
  assert.equal(missing.status, 2, 'a usage error, as every command\'s missing input');
  assert.match(missing.stderr, /no such file: .*nope\.pt/);
  // bad usage exits 2: no file, a bad port, opposite flags, a flag given twice
  for (const [args, said] of [
    [['--no-serve'], /expected exactly one FILE\.pt/],
    [[untraced, '--port', 'abc'], /--port: expected an integer/],
    [[untraced, '--serve', '--no-serve'], /--serve and --no-serve ask opposite things/],
    [[untraced, '--no-serve', '--out', join(tmp, 'a'), '--out', join(tmp, 'b')], /--out given twice: give it once/],
  ] as [string[], RegExp][]) {
    const r2 = cli(...args);
    assert.equal(r2.status, 2, `${args.join(' ')}: ${r2.stderr}`);
    assert.match(r2.stderr, said);
  }
});
