// The run a command names, in the forms `serve` takes: a run directory, or slime dump files (FILE.pt, GLOB).
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ageTree, fixturePath } from '../../test/support/fixtures.ts';
import { looseDumpFiles, namesDumpFiles } from './runPaths.ts';
import { openRunArgument } from './openRun.ts';

const tmp = mkdtempSync(join(tmpdir(), 'rlsight-run-arg-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const dbg = join(tmp, 'dbg');
mkdirSync(dbg);
copyFileSync(fixturePath('slime-trace', 'rollout_data', '0.pt'), join(dbg, 'rollout_0.pt'));
copyFileSync(fixturePath('slime-trace', 'rollout_data', 'eval_0.pt'), join(dbg, 'rollout_eval_0.pt'));
ageTree(dbg);

test('a FILE.pt or GLOB opens the dump files as one run; a directory opens as a run directory', async () => {
  assert.equal(namesDumpFiles(join(dbg, 'rollout_*.pt')), true);
  assert.equal(namesDumpFiles(join(dbg, 'rollout_0.pt')), true);
  assert.equal(namesDumpFiles(dbg), false);
  assert.equal(namesDumpFiles(join(tmp, 'no-such-run')), false, 'a missing name is a missing run directory');
  for (const [arg, ids] of [
    [join(dbg, 'rollout_*.pt'), { train: [0], eval: [0] }],
    [join(dbg, 'rollout_0.pt'), { train: [0], eval: [] }],
    [fixturePath('slime-trace'), { train: [0, 1], eval: [0] }],
  ] as const) {
    const opened = await openRunArgument(arg);
    assert.ok('run' in opened, 'problem' in opened ? opened.problem : arg);
    try {
      assert.deepEqual(await opened.run.rolloutIds(), ids, arg);
    } finally {
      await opened.run.close();
    }
  }
});

test('what is wrong with the argument comes back in words; --cache-dir with dump files is refused', async () => {
  assert.deepEqual(await openRunArgument(join(dbg, 'nomatch*.pt')), { problem: `${join(dbg, 'nomatch*.pt')}: no file matches` });
  assert.deepEqual(await openRunArgument(join(tmp, 'nope')), { problem: `no such directory: ${join(tmp, 'nope')}` });
  const notDump = join(tmp, 'notes.pt');
  writeFileSync(notDump, 'not a dump');
  // an old file (a new one that does not decode may still be being written)
  utimesSync(notDump, Date.now() / 1000 - 3600, Date.now() / 1000 - 3600);
  const bad = await openRunArgument(notDump);
  assert.ok('problem' in bad && /^no slime rollout dump in .*notes\.pt \(.*notes\.pt: /.test(bad.problem), JSON.stringify(bad));
  const folder = await openRunArgument(dbg);
  assert.ok('problem' in folder && folder.problem.includes('holds .pt files (rollout_0.pt, rollout_eval_0.pt)') && folder.problem.includes(`'${join(dbg, 'rollout_*.pt')}'`), JSON.stringify(folder));
  assert.deepEqual(await openRunArgument(join(dbg, 'rollout_*.pt'), { dumpFiles: false }), {
    problem: `${join(dbg, 'rollout_*.pt')} is not a directory; slime dump files (FILE.pt or a quoted GLOB) are given on their own, without --dump-details`,
  });
  await assert.rejects(openRunArgument(join(dbg, 'rollout_*.pt'), { cacheDir: join(tmp, 'cache') }), (e: Error & { param?: string }) => e.param === 'cacheDir');
  assert.deepEqual(looseDumpFiles(join(tmp, 'nope')), null);
});
