// `rlsight serve DIR` without --cache-dir keeps each run's derived caches in a folder of its own under the
// user's cache directory (so the warm-up runs and a second start is warm); --no-cache keeps none; a default
// that cannot be used is said on stderr and the run is served from memory.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { defaultRunCache, userCacheRoot } from '../src/commands/cacheHome.ts';
import { parseServeFlags } from '../src/commands/serve.ts';
import { ensureCliBuilt, RLSIGHT_BIN, servingUrl, warmedUp } from './support/cli.ts';
import { copyFixtureRun } from './support/fixtures.ts';

ensureCliBuilt();
const scratch = mkdtempSync(join(tmpdir(), 'rlsight-cache-home-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const run = copyFixtureRun();
after(() => run.dispose());

/** Serves the fixture run with `args` and the cache root `root`; hands the server's URL and stderr to `fn`. */
async function serving(root: string, args: string[], fn: (url: string) => Promise<void>): Promise<string> {
  const child = spawn(process.execPath, [RLSIGHT_BIN, 'serve', run.dir, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RLSIGHT_CACHE_DIR: root } });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  try {
    await fn(await servingUrl(child));
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill();
    await exited;
  }
  return stderr;
}

test('the cache root: RLSIGHT_CACHE_DIR, else XDG_CACHE_HOME/rlsight, else ~/.cache/rlsight; one folder per run, by its real path', () => {
  assert.equal(userCacheRoot({ RLSIGHT_CACHE_DIR: '/c/r', XDG_CACHE_HOME: '/x' }), '/c/r');
  assert.equal(userCacheRoot({ XDG_CACHE_HOME: '/x' }), '/x/rlsight');
  assert.match(userCacheRoot({}), /\/\.cache\/rlsight$/);
  const root = join(scratch, 'root-a');
  const a = defaultRunCache(run.dir, root);
  assert.ok('dir' in a && existsSync(a.dir) && a.dir.startsWith(join(root, 'runs', 'run-')));
  assert.deepEqual(defaultRunCache(join(run.dir, '..', 'run'), root), a, 'the same run by another path');
  const inside = defaultRunCache(run.dir, join(run.dir, 'cache'));
  assert.ok('problem' in inside && /inside the run/.test(inside.problem));
  // a cache root that is a link into the run lies inside it all the same
  symlinkSync(run.dir, join(scratch, 'link-into-run'));
  const linked = defaultRunCache(run.dir, join(scratch, 'link-into-run'));
  assert.ok('problem' in linked && /inside the run once its links are followed/.test(linked.problem), JSON.stringify(linked));
  assert.equal(existsSync(join(run.dir, 'runs')), false, 'nothing was made inside the run');
  // nor a root below such a link: it is refused before anything is made
  const below = defaultRunCache(run.dir, join(scratch, 'link-into-run', 'sub'));
  assert.ok('problem' in below && /inside the run once its links are followed/.test(below.problem), JSON.stringify(below));
  assert.equal(existsSync(join(run.dir, 'sub')), false, 'no folder was made inside the run');
  // a run folder gone since it was found is said, not thrown
  const gone = defaultRunCache(join(scratch, 'no-such-run'), root);
  assert.ok('problem' in gone && /no-such-run cannot be read \(ENOENT\)/.test(gone.problem), JSON.stringify(gone));
  writeFileSync(join(scratch, 'a-file'), '');
  const blocked = defaultRunCache(run.dir, join(scratch, 'a-file'));
  assert.ok('problem' in blocked && /cannot be written/.test(blocked.problem));
});

test('serve keeps the documented default memory budget of 160 MiB', () => {
  assert.equal(parseServeFlags([run.dir]).memoryBudgetMiB, 160);
  assert.equal(parseServeFlags([run.dir]).noCache, false);
  assert.equal(parseServeFlags([run.dir, '--no-cache']).noCache, true);
});

test('serve without --cache-dir warms the run into its own folder under the cache root, and says nothing about it', async () => {
  const root = join(scratch, 'root-serve');
  const stderr = await serving(root, [], warmedUp);
  const folders = readdirSync(join(root, 'runs'));
  assert.equal(folders.length, 1);
  assert.ok(readdirSync(join(root, 'runs', folders[0]!)).length > 0, 'the warm-up persisted hours there');
  assert.equal(stderr, '');
  assert.ok(!readdirSync(run.dir).some((f) => f.includes('cache')), 'nothing is written inside the run');
  // a second start over the same run uses the same folder
  await serving(root, [], warmedUp);
  assert.deepEqual(readdirSync(join(root, 'runs')), folders);
});

test('--no-cache keeps nothing on disk; a cache root that cannot be used is said and the run served from memory', async () => {
  const root = join(scratch, 'root-none');
  await serving(root, ['--no-cache'], async (url) => assert.equal((await fetch(new URL('/api/meta', url))).status, 200));
  assert.equal(existsSync(root), false);
  writeFileSync(join(scratch, 'not-a-dir'), '');
  const stderr = await serving(join(scratch, 'not-a-dir'), [], async (url) => {
    const meta = (await (await fetch(new URL('/api/meta', url))).json()) as { warmup?: unknown };
    assert.equal(meta.warmup, undefined, 'no warm-up without a cache');
  });
  assert.match(stderr, new RegExp(`${realpathSync(run.dir)}|${run.dir}`));
  assert.match(stderr, /derived data kept in memory only: .* cannot be written/);
  const both = spawnSync(process.execPath, [RLSIGHT_BIN, 'serve', run.dir, '--no-cache', '--cache-dir', root], { encoding: 'utf8' });
  assert.equal(both.status, 2);
  assert.match(both.stderr, /--no-cache: give either --cache-dir DIR or --no-cache, not both/);
});
