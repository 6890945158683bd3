// `rlsight serve FILE.pt|GLOB` (slime --save-debug-rollout-data files) on the command line: every option `serve`
// documents is either honoured or refused saying it does not apply to dump files; a glob matching nothing and a
// dump file beside a run directory are usage errors (exit 2) saying so.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ensureCliBuilt, RLSIGHT_BIN, servingUrl } from './support/cli.ts';
import { ageTree, fixturePath } from './support/fixtures.ts';

ensureCliBuilt();

const tmp = mkdtempSync(join(tmpdir(), 'rlsight-serve-dumps-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A folder of slime's `--save-debug-rollout-data rollout_{rollout_id}.pt` files. */
function debugDumps(): string {
  const dir = join(tmp, 'dbg');
  mkdirSync(dir, { recursive: true });
  const data = fixturePath('slime-trace', 'rollout_data');
  copyFileSync(join(data, '0.pt'), join(dir, 'rollout_0.pt'));
  copyFileSync(join(data, '1.pt'), join(dir, 'rollout_1.pt'));
  copyFileSync(join(data, 'eval_0.pt'), join(dir, 'rollout_eval_0.pt'));
  ageTree(dir);
  return dir;
}
const dbg = debugDumps();
const glob = join(dbg, 'rollout_*.pt');

function serve(...args: string[]) {
  return spawnSync(process.execPath, [RLSIGHT_BIN, 'serve', ...args, '--port', '0'], { encoding: 'utf8', timeout: 60_000 });
}

test('serve options with nothing to act on in dump files are refused, naming the option and why (exit 2)', () => {
  for (const [flag, value, why] of [
    ['--tensorboard', tmp, /serve DIR --tensorboard LOGDIR/],
    ['--memory-budget', '64', /dump files have no telemetry/],
    ['--cache-dir', join(tmp, 'cache'), /keep no cache/],
    ['--tensor-lru', '3', /not by --tensor-lru/],
  ] as [string, string, RegExp][]) {
    const r = serve(glob, flag, value);
    assert.equal(r.status, 2, `${flag}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^rlsight: ${flag}: does not apply when serving dump files \\(FILE\\.pt\\|GLOB\\)`), flag);
    assert.match(r.stderr, why, flag);
    assert.doesNotMatch(r.stderr, /Unknown option/);
  }
});

test('a glob matching nothing, and dump files beside a run directory, are usage errors that say so', () => {
  const none = serve(join(dbg, 'nomatch*.pt'));
  assert.equal(none.status, 2, none.stderr);
  assert.match(none.stderr, /nomatch\*\.pt: no file matches/);
  const mixed = serve(fixturePath('miles-demo', 'run'), join(dbg, 'rollout_0.pt'));
  assert.equal(mixed.status, 2, mixed.stderr);
  assert.match(mixed.stderr, /slime dump files \(FILE\.pt\|GLOB\) cannot be mixed with run directories \(here the run directory .*miles-demo\/run\)/);
  const flagged = serve('--dump-details', fixturePath('slime-trace'), join(dbg, 'rollout_0.pt'));
  assert.equal(flagged.status, 2, flagged.stderr);
  assert.match(flagged.stderr, /cannot be mixed with run directories \(here --dump-details /);
  // an unquoted glob reaches serve as several files
  const expanded = serve(join(dbg, 'rollout_0.pt'), join(dbg, 'rollout_1.pt'));
  assert.equal(expanded.status, 2, expanded.stderr);
  assert.match(expanded.stderr, /give one FILE\.pt or one quoted GLOB, not 2 files \(an unquoted glob is expanded by the shell/);
});

test('--health-config, --use-utilization-overview and --follow act on served dump files', async () => {
  const config = join(tmp, 'health.json');
  writeFileSync(config, JSON.stringify({ reward_jump: { warn: 0.001, fire: 0.002 } }));
  const bad = serve(glob, '--health-config', join(tmp, 'nope.json'));
  assert.equal(bad.status, 2, bad.stderr);
  assert.match(bad.stderr, /--health-config: cannot read .*nope\.json/);
  const child = spawn(process.execPath, [RLSIGHT_BIN, 'serve', glob, '--health-config', config, '--use-utilization-overview', '--follow', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const url = await servingUrl(child);
    const health = (await (await fetch(new URL('/api/rlsight/health', url))).json()) as { signals: { id: string; warn: number; fire: number }[] };
    const jump = health.signals.find((s) => s.id === 'reward_jump')!;
    assert.deepEqual([jump.warn, jump.fire], [0.001, 0.002], 'the thresholds of --health-config');
    const meta = (await (await fetch(new URL('/api/meta', url))).json()) as { mode: string; rollout_ids: { train: number[] }; capabilities: { use_utilization_overview: boolean } };
    assert.equal(meta.capabilities.use_utilization_overview, true);
    assert.equal(meta.mode, 'follow');
    assert.deepEqual(meta.rollout_ids.train, [0, 1]);
    // a file the glob matches, written while serving, joins the run
    copyFileSync(join(dbg, 'rollout_1.pt'), join(dbg, 'rollout_2.pt'));
    let train: number[] = [];
    for (let i = 0; i < 100 && !train.includes(2); i++) {
      await new Promise((r) => setTimeout(r, 100));
      train = ((await (await fetch(new URL('/api/meta', url))).json()) as typeof meta).rollout_ids.train;
    }
    assert.deepEqual(train, [0, 1, 2]);
  } finally {
    child.kill('SIGTERM');
    rmSync(join(dbg, 'rollout_2.pt'), { force: true });
  }
});
