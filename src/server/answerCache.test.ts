import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { answerCache } from './answerCache.ts';

function app(budget?: number) {
  const state = { version: 'v1' as string | null, computed: 0, status: 200, moveWhileComputing: false };
  const api = new Hono();
  api.use('/t/*', answerCache(() => state.version, budget));
  api.get('/t/:n', (c) => {
    state.computed++;
    if (state.moveWhileComputing) state.version = `${state.version}+`;
    const n = Number(c.req.param('n'));
    return c.json({ n, version: state.version, filler: 'x'.repeat(n) }, state.status as 200);
  });
  return { api, state };
}

const get = (api: Hono, path: string, gzip = false) => api.request(path, { headers: gzip ? { 'accept-encoding': 'gzip' } : {} });

test('the same request under the same telemetry version is answered from the kept body', async () => {
  const { api, state } = app();
  const a = await (await get(api, '/t/10')).text();
  const b = await (await get(api, '/t/10')).text();
  assert.equal(a, b);
  assert.equal(state.computed, 1);
  await get(api, '/t/11');
  assert.equal(state.computed, 2);
  state.version = 'v2';
  assert.equal(JSON.parse(await (await get(api, '/t/10')).text()).version, 'v2');
  assert.equal(state.computed, 3);
});

test('gzip-accepting clients get the kept body gzipped, equal after decoding', async () => {
  const { api, state } = app();
  const plain = await (await get(api, '/t/5000')).text();
  const first = await get(api, '/t/5000', true);
  assert.equal(first.headers.get('content-encoding'), 'gzip');
  const second = await get(api, '/t/5000', true);
  assert.equal(gunzipSync(Buffer.from(await first.arrayBuffer())).toString(), plain);
  assert.equal(gunzipSync(Buffer.from(await second.arrayBuffer())).toString(), plain);
  assert.equal(state.computed, 2); // one plain, one gzipped
});

test('errors, answers computed while the version moved, oversized bodies and runs without a version are never kept', async () => {
  const { api, state } = app(4000);
  state.status = 404;
  await get(api, '/t/1');
  await get(api, '/t/1');
  assert.equal(state.computed, 2);
  state.status = 200;
  state.moveWhileComputing = true;
  await get(api, '/t/2');
  state.moveWhileComputing = false;
  await get(api, '/t/2');
  await get(api, '/t/2');
  assert.equal(state.computed, 4);
  await get(api, '/t/3000');
  await get(api, '/t/3000');
  assert.equal(state.computed, 6);
  state.version = null;
  await get(api, '/t/2');
  await get(api, '/t/2');
  assert.equal(state.computed, 8);
});

test('the byte budget drops the least recently used bodies', async () => {
  const { api, state } = app(4000);
  for (const n of [1000, 1001, 1002]) await get(api, `/t/${n}`);
  await get(api, '/t/1000'); // kept
  assert.equal(state.computed, 3);
  for (const n of [1003, 1004]) await get(api, `/t/${n}`);
  await get(api, '/t/1001'); // dropped: least recently used
  assert.equal(state.computed, 6);
});
