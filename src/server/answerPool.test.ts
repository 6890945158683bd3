import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { joinPieces } from '../formats/columnFrame.ts';
import type { GpuAnswer } from '../wire/index.ts';
import { AnswerPool, typedNumbers } from './answerPool.ts';
import type { EncodeReply } from './answerEncoder.ts';
import { gpuFrame } from './columns.ts';
import { startModuleWorker } from '../ownFiles.ts';
import { collectGarbage, settlesBelow } from '../../test/support/collectGarbage.ts';
import { jsonBody } from './json.ts';

/** A gpu answer of `lanes` lanes of `points` samples each, as the compact schema gives it. */
function gpuAnswer(lanes: number, points: number): GpuAnswer {
  const out: GpuAnswer['lanes'] = {};
  for (let l = 0; l < lanes; l++) {
    const ts = Float64Array.from({ length: points }, (_, i) => 1.7e9 + i + l / 1000);
    out[`10.0.${l >> 3}.1:${l & 7}`] = {
      ts,
      util: Uint8Array.from({ length: points }, (_, i) => (i * 7 + l) % 101),
      mem_mb: Uint32Array.from({ length: points }, (_, i) => 40_000 + ((i * 13 + l) % 997)),
      power_w: Uint16Array.from({ length: points }, (_, i) => 300 + ((i + l) % 400)),
    };
  }
  return { lanes: out };
}

const pool = new AnswerPool(1, 2);
after(() => pool.close());

async function drain(body: ReadableStream<Uint8Array>): Promise<Buffer> {
  return Buffer.from(await new Response(body).arrayBuffer());
}

test('an answer encoded on a thread is byte for byte the one the serving thread writes, JSON and frame', async () => {
  const answer = gpuAnswer(64, 2000);
  assert.equal(typedNumbers(answer), 64 * 2000 * 4);
  const here = jsonBody(answer);
  const expected = typeof here === 'string' ? Buffer.from(here) : await drain(here);
  const json = await drain(pool.body({ kind: 'json', value: answer }, new AbortController().signal)!);
  assert.equal(json.toString(), expected.toString());
  const frame = await drain(pool.body({ kind: 'gpu_frame', answer }, new AbortController().signal)!);
  assert.deepEqual(frame, Buffer.from(joinPieces(gpuFrame(answer))));
  assert.equal(pool.counts.finished, 2);
  // an answer made for the response is moved to the thread, not copied: its columns are gone from here
  const own = gpuAnswer(64, 2000);
  const moved = await drain(pool.body({ kind: 'json', value: own }, new AbortController().signal, true)!);
  assert.equal(moved.toString(), expected.toString());
  assert.equal((Object.values(own.lanes)[0].ts as Float64Array).byteLength, 0, 'the columns were handed over');
});

test('a job whose reader went away stops at its next chunk; one queued is never started; the queue is bounded', async () => {
  const answer = gpuAnswer(1024, 2000); // ~40 MB of JSON, ~160 chunks
  const before = { ...pool.counts };
  const running = new AbortController();
  const body = pool.body({ kind: 'json', value: answer }, running.signal)!;
  const reader = body.getReader();
  await reader.read();
  // the thread is busy with it: the next jobs wait, and the queue holds two
  const gone = new AbortController();
  const queued = pool.body({ kind: 'json', value: { a: new Float64Array(10) } }, gone.signal)!;
  const waits = pool.body({ kind: 'json', value: { b: new Float64Array(3) } }, new AbortController().signal)!;
  assert.equal(pool.body({ kind: 'json', value: {} }, new AbortController().signal), null, 'a full queue encodes on the serving thread');
  assert.deepEqual(pool.load, { running: 1, waiting: 2 });
  gone.abort();
  await reader.cancel();
  assert.equal(pool.counts.cancelled - before.cancelled, 2);
  // the one still read comes next, whole; the cancelled ones never finished
  assert.equal((await drain(waits)).toString(), '{"b":[0,0,0]}');
  await assert.rejects(drain(queued), /cancelled/);
  assert.equal(pool.counts.started - before.started, 2, 'the cancelled queued job never started');
  assert.equal(pool.counts.finished - before.finished, 1);
  assert.ok(pool.counts.chunks - before.chunks < 10, `${pool.counts.chunks - before.chunks} chunks taken of ~160`);
});

test('a pool whose thread cannot start leaves every answer to its caller, the failed one included', async () => {
  const broken = new AnswerPool(1, 2, () => {
    throw new Error('no threads here');
  });
  const answer = gpuAnswer(8, 100);
  assert.equal(broken.offThread(1e9), true);
  assert.equal(broken.body({ kind: 'json', value: answer }, new AbortController().signal, true), null, 'the caller encodes it');
  assert.equal(broken.load.waiting, 0, 'nothing left queued');
  assert.equal(broken.offThread(1e9), false, 'later answers are not offered to it');
  assert.ok(answer.lanes && Object.keys(answer.lanes).length === 8, 'the answer is still whole');
});

test('a thread prepared ahead of an answer is the one that encodes it; preparing again starts no other', async () => {
  let started = 0;
  const prepared = new AnswerPool(1, 2, () => {
    started++;
    return startModuleWorker('server/answerEncoder', { execArgv: [] });
  });
  try {
    prepared.prepare();
    assert.equal(started, 1, 'started before any answer asks for it');
    assert.equal(prepared.threadsUp, 1);
    prepared.prepare();
    const answer = gpuAnswer(64, 2000);
    const expected = jsonBody(gpuAnswer(64, 2000));
    const json = await drain(prepared.body({ kind: 'json', value: answer }, new AbortController().signal)!);
    assert.equal(json.toString(), typeof expected === 'string' ? expected : (await drain(expected)).toString());
    assert.equal(started, 1, 'the answer took the prepared thread');
    assert.equal(prepared.counts.finished, 1);
  } finally {
    await prepared.close();
  }
});

test('an encoding thread holds none of an answer it encoded once the answer is out', async () => {
  const worker = startModuleWorker('server/answerEncoder', { execArgv: [] });
  try {
    const replies: EncodeReply[] = [];
    let wake: () => void = () => {};
    worker.on('message', (m: EncodeReply) => {
      replies.push(m);
      wake();
    });
    const next = async (): Promise<EncodeReply> => {
      while (replies.length === 0) await new Promise<void>((r) => (wake = r));
      return replies.shift()!;
    };
    // a buffer is counted by the thread that made it wherever it went since: the columns by this one, the chunks by the thread
    const held = async (): Promise<number> => {
      worker.postMessage({ memory: true });
      const m = await next();
      assert.ok('arrayBuffers' in m);
      return m.arrayBuffers + process.memoryUsage().arrayBuffers;
    };
    collectGarbage();
    const before = await held();
    // ~19 MB of columns, moved to the thread as the server moves an all-lanes answer
    const answer = gpuAnswer(64, 20_000);
    const control = new Int32Array(new SharedArrayBuffer(8));
    const buffers = [...new Set(Object.values(answer.lanes).flatMap((l) => Object.values(l).map((c) => (c as Float64Array).buffer as ArrayBuffer)))];
    worker.postMessage({ job: { kind: 'gpu_frame', answer }, control }, buffers);
    for (;;) {
      const m = await next();
      if ('end' in m) break;
      assert.ok('chunk' in m);
      Atomics.sub(control, 1, 1);
      Atomics.notify(control, 1);
    }
    const kept = await settlesBelow(async () => (await held()) - before, 2 << 20);
    assert.ok(kept < 2 << 20, `the thread still holds ${kept} bytes of buffers`);
  } finally {
    await worker.terminate();
  }
});
