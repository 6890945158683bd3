// A build of the web app (`npm run build:web`, or `vite build web` as the browser tests run it) empties its
// output folder; it must leave the trace page script `rlsight trace` inlines, identical to `npm run build:trace`'s.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PACKAGE_ROOT } from '../src/ownFiles.ts';

const tmp = mkdtempSync(join(tmpdir(), 'rlsight-web-build-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

test('vite build web writes trace-standalone.js into the folder it empties, the same bytes build:trace writes', () => {
  const out = join(tmp, 'dist');
  mkdirSync(out);
  // what an earlier build left: emptied by this one
  writeFileSync(join(out, 'stale.txt'), 'x');
  execFileSync(process.execPath, [join(PACKAGE_ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', 'web', '--outDir', out, '--emptyOutDir', '--logLevel', 'warn'], { cwd: PACKAGE_ROOT, stdio: 'pipe' });
  assert.ok(existsSync(join(out, 'index.html')), 'the app');
  assert.ok(!existsSync(join(out, 'stale.txt')), 'the folder was emptied first');
  const script = join(out, 'trace-standalone.js');
  assert.ok(existsSync(script), 'trace-standalone.js is written by the app build itself');
  // build:trace's command line (package.json), into a file of its own
  const alone = join(tmp, 'alone.js');
  const cmd = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['build:trace']!;
  const args = cmd.split(/\s+/).slice(1).map((a) => (a.startsWith('--outfile=') ? `--outfile=${alone}` : a));
  execFileSync(join(PACKAGE_ROOT, 'node_modules', '.bin', 'esbuild'), args, { cwd: PACKAGE_ROOT, stdio: 'pipe' });
  assert.equal(readFileSync(script, 'utf8'), readFileSync(alone, 'utf8'));
});
