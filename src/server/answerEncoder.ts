// Worker thread body: turns an answer of typed columns into its body bytes (JSON text, or the columnar frame)
// off the serving thread, so cheap answers never wait behind the tens of MB of an all-lanes window. Chunks
// are posted back as they are made, at most a few ahead of what the serving thread took; a cancelled job
// stops at its next chunk.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort } from 'node:worker_threads';
import type { GpuAnswer } from '../wire/index.ts';
import { gpuFrame } from './columns.ts';
import { jsonChunks } from './json.ts';

/** What to encode: any answer as JSON, or a gpu answer as its columnar frame. */
export type EncodeJob = { kind: 'json'; value: unknown } | { kind: 'gpu_frame'; answer: GpuAnswer };

/** The job as sent: `control` [0] is 1 once cancelled, [1] counts chunks posted and not yet taken. */
export interface EncodeMessage {
  job: EncodeJob;
  control: Int32Array;
}

/** What the thread posts back for a job: chunks, then `end` or `error`; to a `{ memory: true }` question, its buffers' bytes. */
export type EncodeReply = { chunk: Uint8Array } | { end: true; chunks: number } | { error: string } | { arrayBuffers: number };

/** Chunks a job may post ahead of what the serving thread took. */
export const CHUNKS_AHEAD = 4;
function* chunks(job: EncodeJob): Generator<Uint8Array> {
  if (job.kind === 'gpu_frame') yield* gpuFrame(job.answer);
  // the serving thread's own chunks: a thread's heap holds little garbage
  else yield* jsonChunks(job.value);
}

/** Runs one job, stopping when it is cancelled; returns the chunks it posted. */
function encode(port: NonNullable<typeof parentPort>, { job, control }: EncodeMessage): number {
  let posted = 0;
  for (const chunk of chunks(job)) {
    for (let ahead = Atomics.load(control, 1); ahead >= CHUNKS_AHEAD && Atomics.load(control, 0) === 0; ahead = Atomics.load(control, 1)) Atomics.wait(control, 1, ahead, 1000);
    if (Atomics.load(control, 0) !== 0) return posted;
    // a view over a buffer of its own is handed over; a part of a shared one (Buffer's pool) is copied
    // (Buffer's slice() is a view, not a copy: the pool itself cannot be moved)
    const own = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && !(chunk.buffer instanceof SharedArrayBuffer);
    const out = own ? chunk : new Uint8Array(chunk);
    Atomics.add(control, 1, 1);
    port.postMessage({ chunk: out } satisfies EncodeReply, [out.buffer as ArrayBuffer]);
    posted++;
  }
  return posted;
}

// The job's columns arrive as buffers outside this thread's small heap, which a thread waiting for its next
// job would never collect: they are let go as each job ends.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

const port = parentPort;
if (port !== null) {
  port.on('message', (m: EncodeMessage | { memory: true }) => {
    if ('memory' in m) {
      port.postMessage({ arrayBuffers: process.memoryUsage().arrayBuffers } satisfies EncodeReply);
      return;
    }
    try {
      port.postMessage({ end: true, chunks: encode(port, m) } satisfies EncodeReply);
    } catch (err) {
      port.postMessage({ error: String((err as Error)?.stack ?? err) } satisfies EncodeReply);
    }
    // once this handler has returned: until then the message is still held by the frame that called it
    setImmediate(collect);
  });
}
