// The Python package's own tests (stdlib unittest, python/tests) run as part of `npm test`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

describe('python package rlsight', () => {
  it('passes its unittest suite', () => {
    const r = spawnSync('python3', ['-m', 'unittest', 'discover', '-s', 'python/tests', '-t', 'python', '-v'], {
      cwd: REPO,
      env: { ...process.env, PYTHONPATH: join(REPO, 'python'), PYTHONDONTWRITEBYTECODE: '1' },
      encoding: 'utf8',
      timeout: 300_000,
    });
    const out = `${r.stdout}\n${r.stderr}`;
    const ran = Number(/Ran (\d+) tests?/.exec(out)?.[1] ?? 0);
    const failed = /FAILED \((?:failures=(\d+))?(?:, )?(?:errors=(\d+))?/.exec(out);
    const bad = failed ? Number(failed[1] ?? 0) + Number(failed[2] ?? 0) : 0;
    const skipped = Number(/skipped=(\d+)/.exec(out)?.[1] ?? 0);
    console.log(`python unittest: ${ran - bad - skipped} passed, ${bad} failed, ${skipped} skipped`);
    assert.equal(r.error, undefined, `python3 could not run: ${r.error?.message}`);
    assert.equal(r.status, 0, out);
    assert.ok(ran >= 15, `only ${ran} tests ran:\n${out}`);
  });
});
