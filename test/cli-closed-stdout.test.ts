// A reader that stops reading the CLI's output (`rlsight search … | head -1`) ends the command quietly: no
// EPIPE stack trace, and the exit code the command has (not 1, which says "nothing matched" for search).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { before, test } from 'node:test';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { fixturePath } from './support/fixtures.ts';

before(() => ensureCliBuilt());

/** Runs the CLI with its stdout's reader gone before anything is printed; its exit code and stderr. */
function withStdoutClosed(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [RLSIGHT_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    // the read end closed at once: the command's first write to stdout meets EPIPE
    child.stdout!.destroy();
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    child.once('error', fail);
    child.once('close', (code) => ok({ code, stderr }));
  });
}

test('search piped into a reader that leaves ends quietly with exit 0 (it matched)', { timeout: 60_000 }, async () => {
  const r = await withStdoutClosed(['search', fixturePath('slime-trace'), 'Natalia']);
  assert.doesNotMatch(r.stderr, /EPIPE|Error|at /, r.stderr);
  assert.equal(r.code, 0, r.stderr);
});

test('health --json and --help with a closed stdout keep the exit code they have, without a stack trace', { timeout: 60_000 }, async () => {
  const run = fixturePath('slime-trace');
  const normal = spawnSync(process.execPath, [RLSIGHT_BIN, 'health', run, '--json'], { encoding: 'utf8' });
  const closed = await withStdoutClosed(['health', run, '--json']);
  assert.doesNotMatch(closed.stderr, /EPIPE|Error|at /, closed.stderr);
  assert.equal(closed.code, normal.status);
  const help = await withStdoutClosed(['--help']);
  assert.equal(help.stderr, '');
  assert.equal(help.code, 0);
});
