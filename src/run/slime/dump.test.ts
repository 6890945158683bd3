import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fixturePath, readFixtureJson } from '../../../test/support/fixtures.ts';
import { readTensorNumbers } from '../../formats/torch/tensorData.ts';
import { PyFloat, PyObject, Tensor } from '../../formats/torch/value.ts';
import { saveTorch } from '../../formats/torch/writer.ts';
import { readSlimeDump, rolloutIdFromName, SlimeDumpError } from './dump.ts';
import { dumpDetailsFiles, looksLikeSlimeDir, SlimeRun, templateFiles } from './run.ts';
import { Opaque, type SlimeValue } from './sample.ts';

const tmp = mkdtempSync(join(tmpdir(), 'rlsight-slime-dump-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Compares a read value with the fixture's decoded rendering (what torch.load returned, as strict JSON). */
async function diff(v: SlimeValue | undefined, d: unknown, path: string): Promise<string | null> {
  if (d === 'NaN' || d === 'Infinity' || d === '-Infinity') {
    const want = d === 'NaN' ? NaN : d === 'Infinity' ? Infinity : -Infinity;
    const got = v instanceof PyFloat ? v.value : v;
    return Object.is(got, want) ? null : `${path}: expected ${d}, got ${String(got)}`;
  }
  if (d === null || typeof d === 'boolean' || typeof d === 'string') return v === d ? null : `${path}: expected ${JSON.stringify(d)}, got ${String(v)}`;
  if (typeof d === 'number') {
    const got = v instanceof PyFloat ? v.value : typeof v === 'bigint' ? Number(v) : v;
    return got === d ? null : `${path}: expected ${d}, got ${String(got)}`;
  }
  if (Array.isArray(d)) {
    if (!Array.isArray(v) || v.length !== d.length) return `${path}: expected a list of ${d.length}`;
    for (let i = 0; i < d.length; i++) {
      const r = await diff(v[i], d[i], `${path}[${i}]`);
      if (r) return r;
    }
    return null;
  }
  const o = d as Record<string, unknown>;
  if (o.__tensor__) {
    if (!(v instanceof Tensor)) return `${path}: expected a tensor`;
    if (`torch.${v.dtype}` !== o.dtype || JSON.stringify(v.shape) !== JSON.stringify(o.shape)) return `${path}: tensor ${v.dtype} ${v.shape}`;
    const data = Array.from(await readTensorNumbers(v));
    return JSON.stringify(data) === JSON.stringify((o.data as unknown[]).flat(8)) ? null : `${path}: tensor data differs`;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof PyFloat || v instanceof Tensor || v instanceof Opaque) return `${path}: expected a dict`;
  const keys = Object.keys(o);
  if (JSON.stringify(Object.keys(v)) !== JSON.stringify(keys)) return `${path}: keys ${Object.keys(v).join(',')} != ${keys.join(',')}`;
  for (const k of keys) {
    const r = await diff((v as Record<string, SlimeValue>)[k], o[k], `${path}.${k}`);
    if (r) return r;
  }
  return null;
}

for (const [fixture, stem] of [['slime-trace', '0'], ['slime-trace', '1'], ['slime-trace', 'eval_0'], ['slime-trace-legacy-pd', '0'], ['slime-trace-legacy-pd', '1']]) {
  test(`${fixture}/${stem}.pt reads as torch.load returned it`, async () => {
    const decoded = readFixtureJson(fixture, 'decoded', `${stem}.json`);
    const dump = await readSlimeDump(fixturePath(fixture, 'rollout_data', `${stem}.pt`));
    assert.equal(dump.rolloutId, decoded.rollout_id);
    assert.equal(dump.evaluation, stem.startsWith('eval_'));
    assert.equal(dump.samples.length, decoded.samples.length);
    for (let i = 0; i < dump.samples.length; i++) {
      assert.equal(dump.samples[i].row, i);
      assert.equal(await diff(dump.samples[i].fields, decoded.samples[i], `samples[${i}]`), null);
    }
    // Python floats with integral values stay floats (reward 1.0), ints stay ints.
    assert.ok(dump.samples.some((s) => s.fields.reward instanceof PyFloat));
    assert.equal(typeof dump.samples[0].fields.response_length, 'number');
  });
}

test('rollout ids and eval flags come from slime file names', () => {
  assert.deepEqual(rolloutIdFromName('rollout_data/3.pt'), { id: 3, evaluation: false });
  assert.deepEqual(rolloutIdFromName('x/eval_12.pt'), { id: 12, evaluation: true });
  assert.deepEqual(rolloutIdFromName('rollout_7.pt'), { id: 7, evaluation: false });
  assert.deepEqual(rolloutIdFromName('rollout_eval_0.pt'), { id: 0, evaluation: true });
  assert.equal(rolloutIdFromName('debug.pt'), null);
});

test('--dump-details layout, globs and a template without a placeholder', async () => {
  assert.deepEqual(dumpDetailsFiles(fixturePath('slime-trace')).map((f) => [f.name, f.rolloutId, f.evaluation]), [
    ['rollout_data/0.pt', 0, false],
    ['rollout_data/1.pt', 1, false],
    ['rollout_data/eval_0.pt', 0, true],
  ]);
  assert.equal(looksLikeSlimeDir(fixturePath('slime-trace')), true);
  assert.equal(looksLikeSlimeDir(fixturePath('miles-demo', 'run')), false);
  const dir = join(tmp, 'debug');
  rmSync(dir, { recursive: true, force: true });
  const { mkdirSync } = await import('node:fs');
  mkdirSync(dir);
  copyFileSync(fixturePath('slime-trace', 'rollout_data', '0.pt'), join(dir, 'rollout_0.pt'));
  copyFileSync(fixturePath('slime-trace', 'rollout_data', '1.pt'), join(dir, 'rollout_1.pt'));
  copyFileSync(fixturePath('slime-trace', 'rollout_data', 'eval_0.pt'), join(dir, 'rollout_eval_0.pt'));
  copyFileSync(fixturePath('slime-trace', 'rollout_data', '1.pt'), join(dir, 'debug.pt'));
  const glob = SlimeRun.fromTemplate(join(dir, 'rollout_*.pt'));
  assert.deepEqual(await glob.rolloutIds(), { train: [0, 1], eval: [0] });
  assert.equal((await glob.dump(0, true))?.samples.length, 7);
  // One file whose name has no id: the id is read from the dump.
  const single = SlimeRun.fromTemplate(join(dir, 'debug.pt'));
  assert.deepEqual(await single.rolloutIds(), { train: [1], eval: [] });
  assert.throws(() => templateFiles(join(dir, 'nothing_*.pt')), /no file matches/);
});

async function expectRefused(path: string, pattern: RegExp): Promise<void> {
  await assert.rejects(readSlimeDump(path, { name: 'rollout_data/bad.pt' }), (err: unknown) => {
    assert.ok(err instanceof SlimeDumpError, String(err));
    assert.match(err.message, /^rollout_data\/bad\.pt: /);
    assert.match(err.message, pattern);
    return true;
  });
}

test('bad dumps are refused with a message naming the file; nothing runs', async () => {
  const truncated = join(tmp, 'truncated.pt');
  copyFileSync(fixturePath('slime-trace', 'rollout_data', '0.pt'), truncated);
  truncateSync(truncated, 40_000);
  await expectRefused(truncated, /not a readable torch dump/);

  const text = join(tmp, 'text.pt');
  writeFileSync(text, 'not a zip at all');
  await expectRefused(text, /not a readable torch dump/);

  // A pickle naming os.system: recorded inertly by the unpickler, refused by the reader.
  const marker = join(tmp, 'executed');
  const hostile = join(tmp, 'hostile.pt');
  await saveTorch({ rollout_id: 0, samples: [{ index: 0, metadata: new PyObject('posix', 'system', [`touch ${marker}`]) }] } as never, hostile);
  await expectRefused(hostile, /posix\.system.*never holds; refused \(nothing was executed\)/);
  assert.throws(() => readFileSync(marker), /ENOENT/);

  const evalGlobal = join(tmp, 'eval.pt');
  await saveTorch(new PyObject('builtins', 'eval', ['1+1']) as never, evalGlobal);
  await expectRefused(evalGlobal, /builtins\.eval/);

  const ints = join(tmp, 'ints.pt');
  await saveTorch([1, 2, 3], ints);
  await expectRefused(ints, /samples\[0\] is a number, not a Sample\.to_dict\(\) dict/);

  const noSamples = join(tmp, 'nosamples.pt');
  await saveTorch({ rollout_id: 3 }, noSamples);
  await expectRefused(noSamples, /no "samples" key/);

  const scalar = join(tmp, 'scalar.pt');
  await saveTorch(42, scalar);
  await expectRefused(scalar, /expected the dict slime writes/);
});

test('a bare list of sample dicts is read as slime viewer reads it, with a warning', async () => {
  const path = join(tmp, 'rollout_5.pt');
  await saveTorch([{ index: 0, group_index: 0, response: 'hi', reward: new PyFloat(1) }], path);
  const d = await readSlimeDump(path);
  assert.equal(d.rolloutId, 5);
  assert.equal(d.samples.length, 1);
  assert.match(d.warnings[0], /bare list of samples/);
});
