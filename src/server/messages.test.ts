// rlsight's own sample routes over the miles fixture: a sample without a recorded conversation is a 200 with the
// empty shape, a step or sample not held a 404; a one-step Perfetto export needs request traces.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { servedFixture } from '../../test/support/servedFixture.ts';

describe('/api/rlsight/rollout/{id}/sample/{index}/messages', () => {
  const served = servedFixture();
  const get = (path: string) => served.get(path);

  test('a recorded conversation is the same as the reference route answers', async () => {
    const ours = await get('/api/rlsight/rollout/0/sample/0/messages');
    const ref = await get('/api/rollout/0/sample/0/messages');
    assert.equal(ours.status, 200);
    assert.deepEqual(await ours.json(), await ref.json());
  });

  test('no conversation recorded: 200, empty messages, recorded false and why (the reference route stays a 404)', async () => {
    const res = await get('/api/rlsight/rollout/0/sample/2/messages');
    assert.equal(res.status, 200);
    const body = (await res.json()) as { sample_index: number; messages: unknown[]; recorded: boolean; note: string };
    assert.deepEqual([body.sample_index, body.messages, body.recorded], [2, [], false]);
    assert.match(body.note, /^no conversation recorded: sample 2 has no recorded conversation in rollout 0/);
    assert.equal((await get('/api/rollout/0/sample/2/messages')).status, 404);
    // An eval step without a sidecar at all answers alike.
    const evalRes = await get('/api/rlsight/rollout/0/sample/3/messages?eval=1');
    assert.equal(evalRes.status, 200);
    assert.equal(((await evalRes.json()) as { recorded: boolean }).recorded, false);
  });

  test('a step or sample the run does not hold is a 404, not an empty conversation', async () => {
    for (const path of ['/api/rlsight/rollout/99/sample/0/messages', '/api/rlsight/rollout/0/sample/999/messages', '/api/rlsight/rollout/7/sample/0/messages?eval=1']) {
      const res = await get(path);
      assert.equal(res.status, 404, path);
      assert.match(((await res.json()) as { detail: string }).detail, /rollout|sample/, path);
    }
  });

  test('a Perfetto export of one step is refused for a run without request traces, naming rollout_id', async () => {
    const res = await get('/api/rlsight/export/perfetto?rollout_id=0');
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { detail: string }).detail, /^rollout_id: this run records no per-request traces/);
    // a time window is taken: this one holds nothing of the run, and the answer says where to look
    const early = await get('/api/rlsight/export/perfetto?t0=1&t1=2');
    assert.equal(early.status, 404);
    assert.match(((await early.json()) as { detail: string }).detail, /^nothing to export between t0 1 and t1 2; the run's phases, GPU utilisation and engine series span /);
  });

  test('bad ids are still 400s', async () => {
    assert.equal((await get('/api/rlsight/rollout/x/sample/2/messages')).status, 400);
  });
});
