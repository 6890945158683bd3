// The dist/ bundle that `npm ci` builds (and `bin/rlsight.mjs` prefers) serves the same answers as the sources.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { ensureCliBuilt, servingUrl, warmedUp } from './support/cli.ts';
import { copyFixtureRun, diffJson, loadGoldens, type RunCopy } from './support/fixtures.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bundle = join(repo, 'dist', 'cli.js');

describe('the dist bundle', () => {
  let run: RunCopy;
  let child: ReturnType<typeof spawn>;
  let url: string;
  before(async () => {
    // Test the bundle of these sources: rebuild it when it is missing or older than them.
    ensureCliBuilt();
    run = copyFixtureRun();
    child = spawn(process.execPath, [bundle, 'serve', '--dump-details', run.dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    url = await servingUrl(child);
    // While its warm-up runs, /api/meta also says how far it is: the goldens are the finished run's.
    await warmedUp(url);
  });
  after(() => {
    child?.kill();
    run?.dispose();
  });

  test('answers the reference goldens of meta, a summary and a token view', async () => {
    const wanted = new Set(['/api/meta', '/api/rollout/1/summary', '/api/rollout/1/sample/32/tokens', '/api/timeline/phases']);
    const goldens = loadGoldens().filter((g) => wanted.has(g.request));
    assert.equal(goldens.length, wanted.size);
    for (const g of goldens) {
      const res = await fetch(new URL(g.request, url));
      assert.equal(res.status, g.status, g.request);
      assert.equal(diffJson(await res.json(), g.body), null, g.request);
    }
  });

  test('serves the web app', async () => {
    const res = await fetch(new URL('/', url));
    assert.equal(res.status, 200);
    assert.match(await res.text(), /<nav|<div id=/);
  });
});
