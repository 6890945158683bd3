// The HTTP API's parameter contract over a real run: a malformed value of a parameter an endpoint takes is a
// 400 naming it; a parameter it does not take is ignored, as the reference's routes ignore one; the token
// range is clamped exactly as the reference documents, and the answer says which range it served.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApp } from '../src/server/app.ts';
import { openRun } from '../src/commands/openRun.ts';
import { copyFixtureRun, type RunCopy } from './support/fixtures.ts';

describe('query parameters over the miles fixture', () => {
  let run: RunCopy;
  let app: ReturnType<typeof createApp>;
  let close: () => Promise<void>;
  before(async () => {
    run = copyFixtureRun('miles-demo');
    const opened = await openRun(run.dir);
    close = () => opened.close();
    app = createApp({ run: opened });
  });
  after(async () => {
    await close();
    run.dispose();
  });
  const get = async (path: string) => {
    const res = await app.request(path, { headers: { host: '127.0.0.1' } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  test('the health board takes no parameter: one it does not take changes nothing, as on every endpoint', async () => {
    const plain = await get('/api/rlsight/health');
    assert.equal(plain.status, 200);
    assert.ok((plain.body.rows as unknown[]).length > 0);
    assert.deepEqual(await get('/api/rlsight/health?step=abc'), plain);
    assert.deepEqual(await get('/api/rollout/1/summary?step=abc'), await get('/api/rollout/1/summary'));
    // A parameter the endpoint does take is checked: the same word is refused where it means something.
    const bad = await get('/api/rlsight/diff/samples?step=abc&group=0');
    assert.equal(bad.status, 400);
    assert.match(String(bad.body.detail), /^step: expected an integer, got "abc"$/);
    // a sample reference too big to be an id is refused naming its own parameter
    const huge = await get('/api/rlsight/diff/samples?a=99999999999999999999:0&b=0:1');
    assert.equal(huge.status, 400);
    assert.match(String(huge.body.detail), /^a: STEP and SAMPLE must be integers below 2\^53$/);
  });

  test('a token range before the sample starts at 0, and the answer says so', async () => {
    const whole = await get('/api/rollout/1/sample/40/tokens?end=6');
    const clamped = await get('/api/rollout/1/sample/40/tokens?start=-5&end=6');
    assert.equal(clamped.status, 200);
    assert.equal(clamped.body.start, 0);
    assert.deepEqual(clamped.body, whole.body);
    assert.equal((clamped.body.token_ids as unknown[]).length, 6);
    const past = await get('/api/rollout/1/sample/40/tokens?start=2&end=1000000');
    assert.equal(past.body.end, past.body.total_len);
    const empty = await get('/api/rollout/1/sample/40/tokens?start=-5&end=0');
    assert.equal(empty.status, 400);
    assert.match(String(empty.body.detail), /^empty token range \[0, 0\) for total_len=\d+$/);
    const malformed = await get('/api/rollout/1/sample/40/tokens?start=-x');
    assert.equal(malformed.status, 400);
    assert.match(String(malformed.body.detail), /^start: /);
  });
});
