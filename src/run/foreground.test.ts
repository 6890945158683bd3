import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ALL_THREADS_AFTER_MS, Foreground, pauseWhileRequests, MAX_DEFER_MS, QUIET_MS, wantThread } from './foreground.ts';

test('background work waits while a request is in flight and a moment after, but never starves', () => {
  let now = 1_000;
  const f = new Foreground(() => now);
  assert.equal(f.backgroundMayRun(), true);
  const done = f.begin();
  assert.equal(f.backgroundMayRun(), false);
  now += 100;
  done();
  done(); // a second call changes nothing
  assert.equal(f.backgroundMayRun(), false, 'just after the request');
  now += QUIET_MS;
  assert.equal(f.backgroundMayRun(), true, 'quiet again');
  // requests back to back: the background gets one step every MAX_DEFER_MS
  const steps: number[] = [];
  for (let t = 0; t < 3 * MAX_DEFER_MS; t += 50) {
    now += 50;
    const end = f.begin();
    if (f.backgroundMayRun()) steps.push(t);
    end();
  }
  assert.ok(steps.length >= 2 && steps.length <= 3, `${steps.length} steps`);
  now += QUIET_MS;
  assert.equal(f.backgroundMayRun(), true);
  // two overlapping requests: busy until both are answered
  const a = f.begin();
  const b = f.begin();
  now += QUIET_MS * 2;
  a();
  now += QUIET_MS * 2;
  assert.equal(f.backgroundMayRun(), false);
  b();
  now += QUIET_MS;
  assert.equal(f.backgroundMayRun(), true);
});

test('how long no one has asked: from the start, then from the last answer; nothing while a request is answered', () => {
  let now = 1_000;
  const f = new Foreground(() => now);
  assert.equal(f.quietForMs(), 0);
  now += ALL_THREADS_AFTER_MS;
  assert.equal(f.quietForMs(), ALL_THREADS_AFTER_MS, 'quiet since the start');
  const done = f.begin();
  assert.equal(f.quietForMs(), 0);
  now += 300;
  done();
  now += 100;
  assert.equal(f.quietForMs(), 100);
});

test('knows whether a first request has been answered (what the parse threads wait for to boot)', () => {
  let now = 1_000;
  const f = new Foreground(() => now);
  assert.equal(f.answeredAny(), false);
  const done = f.begin();
  assert.equal(f.answeredAny(), false, 'begun, not answered');
  now += 10;
  done();
  assert.equal(f.answeredAny(), true);
});

test('settles firstRequest when the first request of any kind arrives (meta too), not before', async () => {
  const f = new Foreground(() => 0);
  const state = () => Promise.race([f.firstRequest().then(() => 'asked'), new Promise((r) => setImmediate(() => r('waiting')))]);
  assert.equal(await state(), 'waiting');
  f.noteRequest();
  assert.equal(await state(), 'asked');
  assert.equal(f.answeredAny(), false, 'arrived is not answered');
});

test('work that waits for a quiet period runs once no request has been in flight that long', async () => {
  const f = new Foreground();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  f.begin()();
  const ended = performance.now();
  await f.idle(60);
  assert.ok(performance.now() - ended >= 55, 'not in the moment after a request');
  // a request in flight holds it; its end starts the quiet period anew
  const a = f.begin();
  let ran = false;
  const waiting = f.idle(40).then(() => (ran = true));
  await sleep(80);
  assert.equal(ran, false, 'a request is still in flight');
  a();
  const end = performance.now();
  await waiting;
  assert.ok(performance.now() - end >= 35);
});

test('work that waits for no request in flight runs once the last one is answered, at once when none is', async () => {
  const f = new Foreground();
  const ran: string[] = [];
  await f.idle().then(() => ran.push('none in flight'));
  const a = f.begin();
  const b = f.begin();
  const waiting = f.idle().then(() => ran.push('after both'));
  a();
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(ran, ['none in flight'], 'one request still in flight');
  b();
  await waiting;
  assert.deepEqual(ran, ['none in flight', 'after both']);
});

test('counts requests in flight where other threads can read it; a background pause waits for them, at most its bound', () => {
  const fg = new Foreground();
  const a = fg.begin();
  const b = fg.begin();
  assert.equal(Atomics.load(fg.inFlight, 0), 2);
  a();
  a();
  assert.equal(Atomics.load(fg.inFlight, 0), 1, 'an end called twice counts once');
  const waited = pauseWhileRequests(fg.inFlight, null, 150);
  assert.ok(waited >= 140, `waited ${waited} ms while a request was in flight`);
  const wanted = new Int32Array(new SharedArrayBuffer(4));
  wantThread(wanted, fg.inFlight, 1);
  assert.ok(pauseWhileRequests(fg.inFlight, wanted, 5_000) < 50, 'a read waiting for a thread of the pool: no wait');
  wantThread(wanted, fg.inFlight, -1);
  assert.ok(pauseWhileRequests(fg.inFlight, wanted, 100) >= 90, 'none waits any more: the pause again');
  b();
  assert.equal(Atomics.load(fg.inFlight, 0), 0);
  assert.ok(pauseWhileRequests(fg.inFlight, null, 5_000) < 50, 'nothing in flight: no wait');
});
