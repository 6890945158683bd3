// A stopped server keeps what its runs were still to write: a step's records, written to the cache directory
// after the answers that read them, are written before the process exits on SIGTERM or SIGINT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyFixtureRun } from './support/fixtures.ts';
import { ensureCliBuilt, RLSIGHT_BIN, servingUrl } from './support/cli.ts';

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`a server stopped with ${signal} right after a step's answer has kept the step in its cache directory`, async () => {
    ensureCliBuilt();
    const run = copyFixtureRun();
    const cache = mkdtempSync(join(tmpdir(), 'rlsight-shutdown-'));
    try {
      const child = spawn(process.execPath, [RLSIGHT_BIN, 'serve', '--dump-details', run.dir, '--cache-dir', cache, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      const url = await servingUrl(child);
      // the stop comes sooner than the quiet moment the write waits for
      const answer = await fetch(new URL('/api/rollout/1/summary', url));
      assert.equal(answer.status, 200);
      await answer.arrayBuffer();
      child.kill(signal);
      assert.equal(await exited, 0);
      const kept = readdirSync(cache, { recursive: true }).map(String).filter((p) => p.endsWith('.step.json'));
      assert.deepEqual(kept, ['rollout_1.step.json']);
    } finally {
      run.dispose();
      rmSync(cache, { recursive: true, force: true });
    }
  });
}
