// Answers under concurrency are the single client's answers, byte for byte, with their bodies written on
// the encoding threads: 16 clients at once over the fixture run.
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { describe, test } from 'node:test';
import { diffJson, readFixtureJson } from '../../test/support/fixtures.ts';
import { servedFixture } from '../../test/support/servedFixture.ts';
import { answerPool } from './answerPool.ts';
import { createApp } from './app.ts';

const COLUMNS = 'application/vnd.rlsight.columns';

describe('answers replayed by 16 clients at once', () => {
  const served = servedFixture();

  test('the gpu goldens, JSON and frames, gzip or not, equal one client\'s answers and the bodies were written on a thread', async () => {
    const requests = ['039', '040', '041'].map((n) => readFixtureJson('miles-demo', 'golden', `${n}.json`) as { request: string; body: unknown });
    const variants: Record<string, string>[] = [{}, { 'accept-encoding': 'gzip' }, { accept: COLUMNS }, { accept: COLUMNS, 'accept-encoding': 'gzip' }];
    const bytes = async (res: Response) => Buffer.from(await res.arrayBuffer());
    // one client, bodies written on the serving thread
    const single = new Map<string, Buffer>();
    for (const g of requests) for (const [i, h] of variants.entries()) single.set(`${g.request} ${i}`, await bytes(await served.get(g.request, h)));
    const threshold = answerPool.offThreadNumbers;
    const before = answerPool.counts.finished;
    answerPool.offThreadNumbers = 0;
    try {
      const app = createApp({ run: served.run }); // nothing kept yet: every answer computed again
      const all = requests.flatMap((g) => variants.flatMap((h, i) => Array.from({ length: 16 }, async () => ({ key: `${g.request} ${i}`, golden: g.body, gzip: 'accept-encoding' in h, columns: 'accept' in h, body: await bytes(await app.request(g.request, { headers: { host: '127.0.0.1', ...h } })) }))));
      for (const a of await Promise.all(all)) {
        assert.deepEqual(a.body, single.get(a.key), a.key);
        if (!a.columns) assert.equal(diffJson(JSON.parse((a.gzip ? gunzipSync(a.body) : a.body).toString()), a.golden), null, a.key);
      }
      assert.equal(answerPool.counts.finished - before, requests.length * variants.length, 'each answer written once, on a thread');
    } finally {
      answerPool.offThreadNumbers = threshold;
    }
  });

  test('an all-lanes gpu answer is assembled a slice at a time, other work running between slices, and stops when no one waits', async () => {
    const run = served.run;
    const whole = await run.gpu({ maxPoints: 2000 });
    const lanes = Object.keys(whole.lanes).length;
    assert.ok(lanes >= 4, `${lanes} lanes`);
    const slice = run.sliceMs;
    run.sliceMs = 0; // a turn for others after every lane
    try {
      let turns = 0;
      let counting = true;
      const count = (): void => {
        turns++;
        if (counting) setImmediate(count);
      };
      setImmediate(count);
      assert.deepEqual(await run.gpu({ maxPoints: 2000 }), whole);
      counting = false;
      assert.ok(turns >= lanes - 1, `${turns} turns for others while ${lanes} lanes were assembled`);
      const gone = new AbortController();
      const stopped = run.gpu({ maxPoints: 2000, signal: gone.signal });
      setImmediate(() => gone.abort());
      await assert.rejects(stopped, { name: 'AbortError' });
    } finally {
      run.sliceMs = slice;
    }
  });

  test('the whole run\'s advisory is read a part at a time, other work running between parts, and stops when no one waits', async () => {
    const run = served.run;
    const whole = await run.advisory({ lowMfu: 0.3, t0: 0 }); // t0 keys an answer of its own: not kept by the others
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns++;
      if (counting) setImmediate(count);
    };
    const again = run.advisory({ lowMfu: 0.3, t0: 1 });
    setImmediate(count);
    assert.deepEqual((await again).advisories, whole.advisories);
    counting = false;
    assert.ok(turns >= 3, `${turns} turns for others while the advisory was read`);
    const gone = new AbortController();
    gone.abort();
    await assert.rejects(run.advisory({ lowMfu: 0.3, t0: 2, signal: gone.signal }), { name: 'AbortError' });
  });
});
