// `/api/rlsight/samples/{index}/step`: the train step holding a sample, found on the server in one request.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type RunningServer, startServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { ageTree, copyFixtureRun, type RunCopy } from './support/fixtures.ts';

describe('the step of a sample', () => {
  let copy: RunCopy;
  let server: RunningServer;
  const get = async (path: string) => {
    const res = await fetch(new URL(path, server.url));
    return { status: res.status, body: (await res.json()) as any };
  };
  before(async () => {
    copy = copyFixtureRun();
    server = await startServer(await openRun(copy.dir), { port: 0 });
  });
  after(async () => {
    await server?.close();
    copy?.dispose();
  });

  test('names the step whose batch holds each sample, with its lifecycle there', async () => {
    for (const step of [0, 1, 2]) {
      const rows = (await get(`/api/rollout/${step}/summary`)).body.rows as { sample_index: number }[];
      for (const { sample_index: sample } of [rows[0], rows[rows.length - 1]]) {
        const { status, body } = await get(`/api/rlsight/samples/${sample}/step?near=0`);
        assert.equal(status, 200);
        assert.equal(body.rollout_id, step, `sample ${sample}`);
        const lanes = (await get(`/api/rollout/${step}/trajectories?sample_index=${sample}`)).body.lanes;
        assert.deepEqual(body.lane, lanes[0] ?? null);
      }
    }
  });

  test('a sample no step holds is a 404; a bad index a 400', async () => {
    const missing = await get('/api/rlsight/samples/999999/step');
    assert.equal(missing.status, 404);
    assert.match(missing.body.detail, /sample 999999/);
    assert.equal((await get('/api/rlsight/samples/x/step')).status, 400);
    assert.equal((await get('/api/rlsight/samples/1/step?near=soon')).status, 400);
  });

  test('a sample not found while a step could not be read is that step’s 422, naming its file', async () => {
    const damaged = copyFixtureRun();
    const dump = join(damaged.dir, 'rollout_data', '2.pt');
    truncateSync(dump, Math.floor(statSync(dump).size / 2));
    ageTree(damaged.dir);
    const other = await startServer(await openRun(damaged.dir), { port: 0 });
    try {
      const res = await fetch(new URL('/api/rlsight/samples/999999/step', other.url));
      assert.equal(res.status, 422);
      assert.match(((await res.json()) as { detail: string }).detail, /^rollout_data\/2\.pt: /);
    } finally {
      await other.close();
      damaged.dispose();
    }
  });
});
