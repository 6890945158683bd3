import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { PARTIAL_HEADER } from './json.ts';
import { Gate, heavyKind, kindGates } from './scheduler.ts';
import { answerSignal, sharedAnswers } from './sharedAnswers.ts';

/** A run API whose answers count their computations and may be held until `release()`. */
function app(opts: { budget?: number; gate?: Gate; gates?: (kind: NonNullable<ReturnType<typeof heavyKind>>) => Gate } = {}) {
  const state = { version: 'v1' as string | null, computed: 0, status: 200, moveWhileComputing: false, partial: false, held: null as Promise<void> | null, pulled: 0 };
  const api = new Hono();
  api.use('/api/*', sharedAnswers({ version: () => state.version, budget: opts.budget, gates: opts.gates, gate: opts.gate ?? (opts.gates ? undefined : new Gate(8, 64)) }));
  const answer = async (c: any) => {
    state.computed++;
    if (state.held) await state.held;
    if (state.moveWhileComputing) state.version = `${state.version}+`;
    const n = Number(c.req.param('n'));
    if (state.partial) c.header(PARTIAL_HEADER, '1/2');
    return c.json({ n, version: state.version, filler: 'x'.repeat(n) }, state.status as 200);
  };
  api.get('/api/timeline/t/:n', answer);
  api.get('/api/rollout/:n/summary', answer);
  // a long body produced piece by piece as it is read
  api.get('/api/timeline/stream', (c) => {
    state.computed++;
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        state.pulled++;
        if (i++ === 1000) controller.close();
        else controller.enqueue(new Uint8Array(65536).fill(48 + (i % 10)));
      },
    });
    return c.body(body, 200, { 'content-type': 'application/json' });
  });
  const hold = (): (() => void) => {
    let release = (): void => {};
    state.held = new Promise((r) => (release = r));
    return () => {
      state.held = null;
      release();
    };
  };
  return { api, state, hold };
}

const get = (api: Hono, path: string, init: { gzip?: boolean; signal?: AbortSignal } = {}) =>
  api.request(path, { headers: init.gzip ? { 'accept-encoding': 'gzip' } : {}, signal: init.signal });
const bytesOf = async (res: Response): Promise<Buffer> => Buffer.from(await res.arrayBuffer());
const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

test('16 identical requests asked at once are computed once and all get the same bytes, gzip or not', async () => {
  for (const path of ['/api/timeline/t/5000', '/api/rollout/3/summary']) {
    const { api, state, hold } = app();
    const release = hold();
    const plain = Array.from({ length: 16 }, () => get(api, path));
    const gzipped = Array.from({ length: 16 }, () => get(api, path, { gzip: true }));
    await tick();
    release();
    const plainBodies = await Promise.all((await Promise.all(plain)).map(bytesOf));
    const gzRes = await Promise.all(gzipped);
    for (const r of gzRes) assert.equal(r.headers.get('content-encoding'), 'gzip');
    const gzBodies = await Promise.all(gzRes.map(bytesOf));
    assert.equal(state.computed, 2, `${path}: one plain computation, one gzipped`);
    assert.equal(new Set(plainBodies.map((b) => b.toString('base64'))).size, 1);
    assert.equal(new Set(gzBodies.map((b) => b.toString('base64'))).size, 1);
    assert.equal(gunzipSync(gzBodies[0]).toString(), plainBodies[0].toString());
  }
});

test('an asker arriving while the body is sent reads it from the start', async () => {
  const { api, state } = app();
  const first = await get(api, '/api/timeline/stream');
  const reader = first.body!.getReader();
  await reader.read();
  const second = bytesOf(await get(api, '/api/timeline/stream'));
  const rest: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    rest.push(value);
  }
  assert.equal((await second).byteLength, 1000 * 65536);
  assert.equal(state.computed, 1);
});

test('the same request under the same telemetry version is answered from the kept body; step answers are shared but not kept', async () => {
  const { api, state } = app();
  const a = await (await get(api, '/api/timeline/t/10')).text();
  const b = await (await get(api, '/api/timeline/t/10')).text();
  assert.equal(a, b);
  assert.equal(state.computed, 1);
  await get(api, '/api/timeline/t/11');
  assert.equal(state.computed, 2);
  state.version = 'v2';
  assert.equal(JSON.parse(await (await get(api, '/api/timeline/t/10')).text()).version, 'v2');
  assert.equal(state.computed, 3);
  await (await get(api, '/api/rollout/1/summary')).text();
  await (await get(api, '/api/rollout/1/summary')).text();
  assert.equal(state.computed, 5);
});

test('gzip-accepting clients get the kept body gzipped, equal after decoding', async () => {
  const { api, state } = app();
  const plain = await (await get(api, '/api/timeline/t/5000')).text();
  const first = await get(api, '/api/timeline/t/5000', { gzip: true });
  assert.equal(first.headers.get('content-encoding'), 'gzip');
  const second = await get(api, '/api/timeline/t/5000', { gzip: true });
  assert.equal(gunzipSync(await bytesOf(first)).toString(), plain);
  assert.equal(gunzipSync(await bytesOf(second)).toString(), plain);
  assert.equal(state.computed, 2); // one plain, one gzipped
});

test('errors, answers computed while the version moved, partial answers, oversized bodies and runs without a version are never kept', async () => {
  const { api, state } = app({ budget: 4000 });
  state.status = 404;
  await get(api, '/api/timeline/t/1');
  await get(api, '/api/timeline/t/1');
  assert.equal(state.computed, 2);
  state.status = 200;
  state.moveWhileComputing = true;
  await get(api, '/api/timeline/t/2');
  state.moveWhileComputing = false;
  await get(api, '/api/timeline/t/2');
  await get(api, '/api/timeline/t/2');
  assert.equal(state.computed, 4);
  await get(api, '/api/timeline/t/3000');
  await get(api, '/api/timeline/t/3000');
  assert.equal(state.computed, 6);
  state.version = null;
  await get(api, '/api/timeline/t/2');
  await get(api, '/api/timeline/t/2');
  assert.equal(state.computed, 8);
});

test('a partial answer is shared by the askers of the moment, never by a later one', async () => {
  const { api, state, hold } = app();
  state.partial = true;
  const release = hold();
  const now = Array.from({ length: 4 }, () => get(api, '/api/timeline/t/7'));
  await tick();
  release();
  for (const r of await Promise.all(now)) assert.equal(r.headers.get(PARTIAL_HEADER), '1/2');
  assert.equal(state.computed, 1);
  state.partial = false;
  const later = await get(api, '/api/timeline/t/7');
  assert.equal(later.headers.get(PARTIAL_HEADER), null);
  assert.equal(state.computed, 2);
});

test('the byte budget drops the least recently used bodies', async () => {
  const { api, state } = app({ budget: 4000 });
  for (const n of [1000, 1001, 1002]) await get(api, `/api/timeline/t/${n}`);
  await get(api, '/api/timeline/t/1000'); // kept
  assert.equal(state.computed, 3);
  for (const n of [1003, 1004]) await get(api, `/api/timeline/t/${n}`);
  await get(api, '/api/timeline/t/1001'); // dropped: least recently used
  assert.equal(state.computed, 6);
});

test('a heavy answer queued at the gate whose askers all went away is never computed; one still waited for is', async () => {
  const gate = new Gate(1, 8);
  const { api, state, hold } = app({ gate });
  const release = hold();
  const busy = get(api, '/api/rollout/1/summary'); // takes the gate's only place
  await tick();
  const gone = [new AbortController(), new AbortController()];
  const queued = gone.map((a) => get(api, '/api/rollout/2/summary', { signal: a.signal }));
  const stays = new AbortController();
  const kept = [get(api, '/api/rollout/3/summary', { signal: stays.signal }), get(api, '/api/rollout/3/summary')];
  await tick();
  assert.deepEqual(gate.load, { inside: 1, waiting: 2 });
  for (const a of gone) a.abort();
  stays.abort(); // one of the two askers of step 3 leaves; the other still waits
  await Promise.all(queued);
  assert.deepEqual(gate.load, { inside: 1, waiting: 1 });
  release();
  await bytesOf(await busy);
  assert.equal(JSON.parse((await bytesOf(await kept[1])).toString()).n, 3);
  assert.equal(state.computed, 2, 'steps 1 and 3 computed; step 2 never');
});

test('a body whose only reader went away stops being produced', async () => {
  const { api, state } = app();
  const abort = new AbortController();
  const res = await get(api, '/api/timeline/stream', { signal: abort.signal });
  const reader = res.body!.getReader();
  await reader.read();
  await reader.cancel();
  await tick();
  const pulled = state.pulled;
  await tick();
  assert.ok(pulled < 100, `${pulled} of 1000 pieces produced`);
  assert.equal(state.pulled, pulled);
  // not kept: the next asker computes it again, whole
  assert.equal((await bytesOf(await get(api, '/api/timeline/stream'))).byteLength, 1000 * 65536);
  assert.equal(state.computed, 2);
});

test('cheap answers are not queued behind heavy ones; a full queue answers 503 with Retry-After', async () => {
  const gate = new Gate(1, 1);
  const { api, hold } = app({ gate });
  api.get('/api/meta', (c) => c.json({ ok: true }));
  const release = hold();
  const heavy = [get(api, '/api/rollout/1/summary'), get(api, '/api/rollout/2/summary')];
  await tick();
  assert.equal((await get(api, '/api/meta')).status, 200);
  const over = await get(api, '/api/rollout/3/summary');
  assert.equal(over.status, 503);
  assert.equal(over.headers.get('retry-after'), '5');
  assert.match(JSON.parse(await over.text()).detail, /busy/);
  release();
  for (const r of await Promise.all(heavy)) assert.equal(r.status, 200);
});

test('kept telemetry answers and a sample\'s tokens are gzipped for speed (level 4), every other answer at the default level', async () => {
  // numbers with structure: levels 4 and 6 compress it differently, so the test sees which one was used
  const rows = Array.from({ length: 4000 }, (_, i) => ({ i, reward: ((i * 7919) % 1000) / 997, status: i % 3 ? 'completed' : 'truncated' }));
  const text = JSON.stringify(rows);
  assert.notDeepEqual(gzipSync(text, { level: 4 }), gzipSync(text), 'the two levels differ on this body');
  const api = new Hono();
  api.use('/api/*', sharedAnswers({ version: () => 'v1', gate: new Gate(8, 64) }));
  const answer = (c: any) => c.body(text, 200, { 'content-type': 'application/json' });
  api.get('/api/timeline/gpu', answer);
  api.get('/api/rollout/1/summary', answer);
  api.get('/api/rollout/1/sample/7/tokens', answer);
  const telemetry = await bytesOf(await get(api, '/api/timeline/gpu', { gzip: true }));
  const summary = await bytesOf(await get(api, '/api/rollout/1/summary', { gzip: true }));
  assert.equal(gunzipSync(summary).toString('utf8'), text);
  assert.deepEqual(telemetry, gzipSync(text, { level: 4 }));
  assert.deepEqual(summary, gzipSync(text));
  assert.deepEqual(await bytesOf(await get(api, '/api/rollout/1/sample/7/tokens', { gzip: true })), gzipSync(text, { level: 4 }));
});

test('an answer whose askers all went away, finishing later, leaves the flight of its next asker joinable', async () => {
  const { api, state, hold } = app();
  const releaseAbandoned = hold();
  const gone = new AbortController();
  const first = get(api, '/api/rollout/4/summary', { signal: gone.signal });
  await tick();
  gone.abort();
  await tick();
  const releaseSecond = hold();
  const second = get(api, '/api/rollout/4/summary'); // computes afresh
  await tick();
  releaseAbandoned(); // the abandoned computation ends while the second is still computed
  await tick();
  const third = get(api, '/api/rollout/4/summary'); // joins the second
  await tick();
  releaseSecond();
  await first;
  for (const r of await Promise.all([second, third])) assert.equal(JSON.parse((await bytesOf(r)).toString()).n, 4);
  assert.equal(state.computed, 2);
});

test("a computing answer stops once every asker went away, and not while one still waits (even when the asker that started it left)", async () => {
  const api = new Hono();
  api.use('/api/*', sharedAnswers({ version: () => 'v1', gate: new Gate(8, 64) }));
  const steps = new Map<string, number>();
  // an answer computed in 200 steps with an await between each, stopping when no one waits for it
  api.get('/api/rollout/:n/summary', async (c) => {
    const n = c.req.param('n');
    const signal = answerSignal(c);
    for (let i = 0; i < 200; i++) {
      if (signal.aborted) return c.body(null, 204);
      steps.set(n, i + 1);
      await new Promise((r) => setTimeout(r, 1));
    }
    return c.json({ n, steps: steps.get(n) });
  });
  const alone = new AbortController();
  const lone = get(api, '/api/rollout/1/summary', { signal: alone.signal });
  await tick();
  alone.abort();
  await Promise.resolve(lone).catch(() => {});
  await tick();
  const stoppedAt = steps.get('1')!;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(steps.get('1'), stoppedAt, 'no step after its only asker left');
  assert.ok(stoppedAt < 200, `${stoppedAt} of 200 steps`);

  const starter = new AbortController();
  const first = get(api, '/api/rollout/2/summary', { signal: starter.signal });
  await tick();
  const second = get(api, '/api/rollout/2/summary');
  await tick();
  starter.abort(); // the asker whose request computes it leaves; the second still waits
  await Promise.resolve(first).catch(() => {});
  assert.deepEqual(JSON.parse((await bytesOf(await second)).toString()), { n: '2', steps: 200 });
});

test('heavy answers of different kinds never queue behind each other: a step waits only behind steps', async () => {
  const q = (s: string) => new URLSearchParams(s);
  assert.equal(heavyKind('/api/rollout/3/summary', q('')), 'step');
  assert.equal(heavyKind('/api/rlsight/rollout/3/preview', q('')), null, 'a preview never queues behind the summaries it comes before');
  assert.equal(heavyKind('/api/timeline/gpu', q('t0=1&t1=2')), 'window');
  assert.equal(heavyKind('/api/timeline/gpu', q('t0=1&t1=2&lanes=g:0')), null);
  assert.equal(heavyKind('/api/timeline/fleet', q('')), 'run');
  assert.equal(heavyKind('/api/advisory', q('')), 'run');
  assert.equal(heavyKind('/api/meta', q('')), null);
  const gates = kindGates(1, 8);
  const { api, state, hold } = app({ gates });
  const release = hold();
  // whole-run answers take the run gate's only place, and one more waits there
  const run = [get(api, '/api/timeline/t/1'), get(api, '/api/timeline/t/2')];
  await tick();
  const step = get(api, '/api/rollout/1/summary');
  await tick();
  assert.equal(state.computed, 2, 'the step is computing beside the whole-run answer, not queued behind both');
  assert.deepEqual(gates('run').load, { inside: 1, waiting: 1 });
  release();
  assert.equal(JSON.parse((await bytesOf(await step)).toString()).n, 1);
  for (const r of run) assert.equal((await r).status, 200);
});

test('answers of paths with versions of their own are kept side by side: keeping one never drops the other', async () => {
  const api = new Hono();
  let computed = 0;
  // the fleet answer's version also covers the run's damage, so it differs from every other path's
  api.use('/api/*', sharedAnswers({ version: (path) => (path === '/api/timeline/fleet' ? 'v1|damage' : 'v1'), gate: new Gate(8, 64) }));
  const answer = (c: any) => {
    computed++;
    return c.json({ path: c.req.path });
  };
  api.get('/api/timeline/fleet', answer);
  api.get('/api/timeline/gpu', answer);
  for (const path of ['/api/timeline/gpu', '/api/timeline/fleet', '/api/timeline/gpu', '/api/timeline/fleet']) await bytesOf(await get(api, path));
  assert.equal(computed, 2, 'each computed once, then kept');
});
