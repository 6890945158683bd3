// The app's downloads (`/api/rlsight/export/…`) over the real fixtures: a sample without a recorded conversation
// still exports its tokens, a step's table is the very file the CLI writes, and a Perfetto window holding nothing
// is refused as the CLI refuses it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openRun, type OpenRun } from '../src/commands/openRun.ts';
import { createApp } from '../src/server/app.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { ageTree, fixturePath } from './support/fixtures.ts';

let out: string;
before(() => {
  ensureCliBuilt();
  out = mkdtempSync(join(tmpdir(), 'rlsight-export-routes-'));
});
after(() => rmSync(out, { recursive: true, force: true }));

/** The app over a copy of `source` (mtimes aged: the dump reader hides young files), opened before the suite's tests. */
function served(source: string) {
  const dir = join(mkdtempSync(join(tmpdir(), 'rlsight-export-routes-run-')), 'run');
  let run: OpenRun;
  let app: ReturnType<typeof createApp>;
  before(async () => {
    cpSync(source, dir, { recursive: true });
    ageTree(dir);
    run = await openRun(dir);
    app = createApp({ run });
  });
  after(async () => {
    await run.close();
    rmSync(join(dir, '..'), { recursive: true, force: true });
  });
  return { dir, get: async (path: string) => app.request(path, { headers: { host: '127.0.0.1' } }) };
}

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [RLSIGHT_BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the miles fixture’s downloads', () => {
  const miles = served(fixturePath('miles-demo', 'run'));

  test('a sample without a recorded conversation exports as JSON with conversation null and its tokens', async () => {
    // only batch positions 0 and 1 of a miles step get a conversation sidecar; eval steps get none
    for (const [step, index, evaluation] of [
      [0, 2, false],
      [1, 34, false],
      [0, 0, true],
    ] as const) {
      const q = evaluation ? '?eval=1' : '';
      const res = await miles.get(`/api/rlsight/export/sample/${step}/${index}${q}`);
      assert.equal(res.status, 200, `${step}/${index}${q}: ${await res.clone().text()}`);
      const doc = (await res.json()) as Record<string, unknown>;
      assert.equal(doc.conversation, null);
      assert.deepEqual([doc.step, doc.sample_index, doc.evaluation], [step, index, evaluation]);
      assert.equal((doc.summary as { sample_index: number }).sample_index, index);
      // the tokens the Sample view shows for it
      const tokens = await (await miles.get(`/api/rollout/${step}/sample/${index}/tokens${q}`)).json();
      assert.deepEqual(doc.tokens, tokens);
      assert.ok((doc.tokens as { token_ids: number[] }).token_ids.length > 0);
    }
    // a recorded one is in it, and a sample the step does not hold is still a 404
    const recorded = (await (await miles.get('/api/rlsight/export/sample/0/0')).json()) as { conversation: { sample_index: number } | null };
    assert.equal(recorded.conversation?.sample_index, 0);
    assert.equal((await miles.get('/api/rlsight/export/sample/0/999')).status, 404);
  });

  test('a step’s table downloads as the same file the CLI writes, eval steps too', async () => {
    for (const [step, evaluation] of [
      [0, true],
      [1, false],
    ] as const) {
      for (const format of ['csv', 'parquet']) {
        const file = join(out, `miles-${evaluation ? 'eval' : 'train'}-${step}.${format}`);
        const r = cli('export', 'rollout', miles.dir, '--step', String(step), ...(evaluation ? ['--eval'] : []), '--out', file);
        assert.equal(r.code, 0, r.stderr);
        const res = await miles.get(`/api/rlsight/export/rollout/${step}?format=${format}${evaluation ? '&eval=1' : ''}`);
        assert.equal(res.status, 200);
        assert.deepEqual(Buffer.from(await res.arrayBuffer()), readFileSync(file), `${format} of ${evaluation ? 'eval ' : ''}step ${step}`);
      }
    }
    const header = readFileSync(join(out, 'miles-eval-0.csv'), 'utf8').split('\r\n')[0].split(',');
    assert.equal(header.indexOf('truncated'), header.indexOf('normalized_reward') + 1);
  });

  test('a Perfetto window holding nothing is a 404 saying where the run’s phases lie, as the CLI says it', async () => {
    const res = await miles.get('/api/rlsight/export/perfetto?t0=2000000000&t1=2000000100');
    assert.equal(res.status, 404);
    const { detail } = (await res.json()) as { detail: string };
    assert.match(detail, /^nothing to export between t0 2000000000 and t1 2000000100; the run's phases, GPU utilisation and engine series span \d+\.\d{3} to \d+\.\d{3} \(Unix seconds\)$/);
    const file = join(out, 'empty.json');
    const r = cli('export', 'perfetto', miles.dir, '--t0', '2000000000', '--t1', '2000000100', '--out', file);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(detail.replace('t0 ', '--t0 ').replace('t1 ', '--t1 ')), `${r.stderr} vs ${detail}`);
  });
});

describe('the slime fixture’s downloads', () => {
  const slime = served(fixturePath('slime-trace'));

  test('a slime step’s table downloads as the same file the CLI writes (truncated after normalized_reward)', async () => {
    const file = join(out, 'slime-1.csv');
    const r = cli('export', 'rollout', slime.dir, '--step', '1', '--out', file);
    assert.equal(r.code, 0, r.stderr);
    const res = await slime.get('/api/rlsight/export/rollout/1?format=csv');
    assert.equal(await res.text(), readFileSync(file, 'utf8'));
  });
});
