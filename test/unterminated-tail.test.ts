// A telemetry file whose last line has no newline, on a finished run: its bytes are left out, and that is said
// (a warning naming the file, `rlsight health` exit 3), not lost in silence.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { createApp } from '../src/server/app.ts';
import { openRun } from '../src/commands/openRun.ts';
import { ageTree, copyFixtureRun, type RunCopy } from './support/fixtures.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';

ensureCliBuilt();

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function health(dir: string): { code: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [RLSIGHT_BIN, 'health', '--dump-details', dir], { cwd: REPO, encoding: 'utf8' });
  return { code: r.status, stderr: r.stderr };
}

describe('an unterminated last line of a finished run', () => {
  let clean: RunCopy;
  let torn: RunCopy;
  before(() => {
    clean = copyFixtureRun();
    torn = copyFixtureRun();
    // bytes with no newline among them, as a crashed writer or a stray copy leaves them
    appendFileSync(join(torn.dir, 'dashboard', 'topology.jsonl'), Buffer.alloc(5000, 0x7a));
    ageTree(torn.dir);
  });
  after(() => {
    clean.dispose();
    torn.dispose();
  });

  test('rlsight health names the file and exits 3; the same run without it exits 0', () => {
    assert.equal(health(clean.dir).code, 0);
    const r = health(torn.dir);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /warning: dashboard\/topology\.jsonl:3: last line has no newline \(5000 bytes left out\)/);
  });

  test('the server lists it in the warnings of /api/meta (the banner)', async () => {
    const app = createApp({ run: await openRun(torn.dir) });
    const res = await app.request('/api/meta', { headers: { host: '127.0.0.1' } });
    assert.equal(res.status, 200);
    const meta = (await res.json()) as { warnings?: string[] };
    assert.ok(meta.warnings?.some((w) => w === 'dashboard/topology.jsonl:3: last line has no newline (5000 bytes left out)'), JSON.stringify(meta.warnings));
  });
});
