// The Python package's own tests (stdlib unittest, python/tests) run as part of `npm test`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

  it('installs with pip without leaving build/ or *.egg-info beside its sources', (t) => {
    if (spawnSync('python3', ['-m', 'pip', '--version']).status !== 0) return t.skip('pip is not available');
    // A copy of python/, so the checkout stays untouched whatever the build does.
    const work = mkdtempSync(join(tmpdir(), 'rlsight-pip-'));
    try {
      const src = join(work, 'python');
      cpSync(join(REPO, 'python'), src, { recursive: true, filter: (p) => !p.includes('__pycache__') });
      const r = spawnSync('python3', ['-m', 'pip', 'install', '--no-deps', '--target', join(work, 'site'), src], { encoding: 'utf8', timeout: 300_000 });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      assert.ok(existsSync(join(work, 'site', 'rlsight', 'client.py')), 'the package was installed');
      // the slime hooks are imported by their dotted path from slime's flags
      const hooks = spawnSync('python3', ['-c', 'import rlsight.integrations.slime as h; print(h.log_rollout_data.__module__)'], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: join(work, 'site') } });
      assert.equal(hooks.stdout.trim(), 'rlsight.integrations.slime', hooks.stderr);
      assert.deepEqual(readdirSync(src).sort(), readdirSync(join(REPO, 'python')).filter((f) => f !== '__pycache__').sort(), 'nothing new beside the sources');
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
