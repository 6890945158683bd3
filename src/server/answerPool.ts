// Answer bodies encoded on worker threads: the JSON text or column frame of an answer of typed columns (the
// gpu series of every lane over an hour: tens of MB) is written by a thread of this pool while the serving
// thread answers everything else. Jobs wait their turn in a bounded queue (a full queue encodes on the
// serving thread as before); a job whose body no one reads any more is dropped before it starts, or stops
// at its next chunk.
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import type { Context } from 'hono';
import { startModuleWorker } from '../ownFiles.ts';
import type { GpuAnswer } from '../wire/index.ts';
import type { EncodeJob, EncodeMessage, EncodeReply } from './answerEncoder.ts';
import { columnsResponse, gpuFrame } from './columns.ts';
import { COLUMNS_MEDIA_TYPE } from '../formats/columnFrame.ts';
import { jsonResponse } from './json.ts';
import { HEAVY_QUEUE } from './scheduler.ts';

/** Numbers in typed columns from which an answer's body is encoded on a thread (below, the serving thread is quicker). */
export const OFF_THREAD_NUMBERS = 1 << 16;

/** Encoding threads: one beside the serving thread and the parse threads on a small machine, two on a larger one. */
export function defaultEncodeThreads(): number {
  return availableParallelism() > 4 ? 2 : 1;
}

/** The buffers of the typed arrays within the first levels of `value`. */
function typedBuffers(value: unknown, into: Set<ArrayBuffer>, depth = 3): Set<ArrayBuffer> {
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer) into.add(value.buffer);
  } else if (depth > 0 && value !== null && typeof value === 'object') {
    for (const v of Array.isArray(value) ? value : Object.values(value)) typedBuffers(v, into, depth - 1);
  }
  return into;
}

/** Typed-array numbers within the first levels of `value` (what structured cloning copies cheaply). */
export function typedNumbers(value: unknown, depth = 3): number {
  if (ArrayBuffer.isView(value)) return value instanceof DataView ? 0 : (value as unknown as ArrayLike<number>).length;
  if (depth === 0 || value === null || typeof value !== 'object') return 0;
  let n = 0;
  for (const v of Array.isArray(value) ? value : Object.values(value)) n += typedNumbers(v, depth - 1);
  return n;
}

interface Job {
  /** Until it is posted: the answer is then the thread's copy, and this one may be collected. */
  message: EncodeMessage | null;
  /** Buffers handed to the thread instead of copied (the answer's own, no one else's). */
  transfer: ArrayBuffer[];
  control: Int32Array;
  /** Chunks posted by the thread, not yet taken by the reader. */
  ready: Uint8Array[];
  done: boolean;
  failure: Error | null;
  wake: (() => void) | null;
  cancelled: boolean;
}

interface Slot {
  worker: Worker;
  job: Job | null;
  /** It has answered at least once (a thread that stops before that cannot start at all here). */
  answered: boolean;
}

export class AnswerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  /** Jobs begun on a thread, finished whole, and cancelled (queued or running); chunks taken by readers. */
  readonly counts = { started: 0, finished: 0, cancelled: 0, chunks: 0 };
  /** Numbers in typed columns from which `offThread` says yes. */
  offThreadNumbers = OFF_THREAD_NUMBERS;
  /** No thread can be started here (one failed to start or stopped before answering): every answer is encoded by its caller. */
  private unavailable = false;

  constructor(
    readonly threads = defaultEncodeThreads(),
    readonly bound = HEAVY_QUEUE,
    // a small young generation: the thread's garbage (text pieces) is collected often instead of growing its heap
    private readonly start: () => Worker = () => startModuleWorker('server/answerEncoder', { execArgv: [], resourceLimits: { maxYoungGenerationSizeMb: 4 } }),
  ) {}

  /** Encoding threads started (or starting) and not gone. */
  get threadsUp(): number {
    return this.slots.length;
  }

  /**
   * Starts an encoding thread if none runs yet, for an answer that may be large once computed: the thread
   * loads its modules while the answer is computed rather than after it.
   */
  prepare(): void {
    if (this.slots.length === 0 && this.threads > 0 && !this.unavailable) this.spawn();
  }

  /** Jobs running and waiting. */
  get load(): { running: number; waiting: number } {
    return { running: this.slots.filter((s) => s.job !== null).length, waiting: this.queue.length };
  }

  /** Whether an answer of `numbers` typed-column numbers is encoded here. */
  offThread(numbers: number): boolean {
    return this.threads > 0 && !this.unavailable && numbers >= this.offThreadNumbers;
  }

  /**
   * The body of `job` encoded on a thread, read as a stream; null when the queue is full (the caller encodes
   * it itself). Cancelling the stream or aborting `signal` stops the job. `owned`: the answer's typed arrays
   * are its own (made for this answer, kept nowhere): they are moved to the thread, not copied, and are
   * unusable here afterwards.
   */
  body(job: EncodeJob, signal: AbortSignal, owned = false): ReadableStream<Uint8Array> | null {
    if (this.queue.length >= this.bound) return null;
    const control = new Int32Array(new SharedArrayBuffer(8));
    const transfer = owned ? [...typedBuffers(job.kind === 'json' ? job.value : job.answer, new Set())] : [];
    const entry: Job = { message: { job, control }, transfer, control, ready: [], done: false, failure: null, wake: null, cancelled: false };
    const cancel = (): void => this.cancel(entry);
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
    if (!entry.cancelled) {
      this.queue.push(entry);
      this.next();
      // no thread could be started for it: the caller encodes it itself (nothing was moved yet)
      const i = this.queue.indexOf(entry);
      if (this.unavailable && i >= 0) {
        this.queue.splice(i, 1);
        signal.removeEventListener('abort', cancel);
        return null;
      }
    }
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        while (entry.ready.length === 0 && !entry.done && !entry.cancelled) await new Promise<void>((r) => (entry.wake = r));
        const chunk = entry.ready.shift();
        if (chunk !== undefined) {
          this.counts.chunks++;
          Atomics.sub(control, 1, 1);
          Atomics.notify(control, 1);
          controller.enqueue(chunk);
          return;
        }
        signal.removeEventListener('abort', cancel);
        if (entry.failure !== null) controller.error(entry.failure);
        else if (entry.cancelled) controller.error(new Error('the answer was cancelled: no one reads it'));
        else controller.close();
      },
      cancel: () => {
        signal.removeEventListener('abort', cancel);
        cancel();
      },
    });
  }

  private cancel(job: Job): void {
    if (job.cancelled || job.done) return;
    job.cancelled = true;
    this.counts.cancelled++;
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
    job.message = null;
    job.transfer = [];
    // a running job sees the flag at its next chunk and ends; its thread then takes the next one
    Atomics.store(job.control, 0, 1);
    Atomics.notify(job.control, 1);
    job.ready.length = 0;
    job.wake?.();
  }

  /** Starts queued jobs on idle threads (starting a thread when fewer than `threads` run). */
  private next(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => s.job === null);
      if (slot === undefined && this.slots.length < this.threads && !this.unavailable) slot = this.spawn();
      if (slot === undefined) return;
      const job = this.queue.shift()!;
      slot.job = job;
      this.counts.started++;
      slot.worker.ref(); // a thread at work keeps the process alive until it answers
      slot.worker.postMessage(job.message, job.transfer);
      job.message = null;
      job.transfer = [];
    }
  }

  private spawn(): Slot | undefined {
    let worker: Worker;
    try {
      worker = this.start();
    } catch (e) {
      this.disable(e);
      return undefined;
    }
    const slot: Slot = { worker, job: null, answered: false };
    worker.on('message', (m: EncodeReply) => {
      if ('arrayBuffers' in m) return;
      slot.answered = true;
      const job = slot.job;
      if (job === null) return;
      if ('chunk' in m) {
        if (!job.cancelled) job.ready.push(m.chunk);
      } else {
        if ('error' in m) job.failure = new Error(`encoding an answer failed: ${m.error}`);
        else if (!job.cancelled) this.counts.finished++;
        job.done = true;
        slot.job = null;
        slot.worker.unref();
        this.next();
      }
      job.wake?.();
    });
    // a thread that fails fails its job, and is replaced for the next one
    const gone = (err?: unknown): void => {
      const i = this.slots.indexOf(slot);
      if (i < 0) return;
      this.slots.splice(i, 1);
      if (!slot.answered) this.disable(err);
      const job = slot.job;
      slot.job = null;
      if (job !== null && !job.done) {
        job.failure = new Error(`the encoding thread stopped: ${String(err ?? 'exited')}`);
        job.done = true;
        job.wake?.();
      }
      this.next();
    };
    worker.on('error', gone);
    worker.on('exit', () => gone());
    worker.unref(); // after its listeners (which ref it): an idle thread never keeps the process alive
    this.slots.push(slot);
    return slot;
  }

  /** From now on every answer is encoded by its caller (said once on stderr). */
  private disable(err: unknown): void {
    if (this.unavailable) return;
    this.unavailable = true;
    console.error(`rlsight: answers are encoded on the serving thread: an encoding thread could not start (${err instanceof Error ? err.message : String(err ?? 'it exited')})`);
  }

  /** Ends every thread (for tests). */
  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }
}

/** The process's encoding threads (every served run shares the cores). */
export const answerPool = new AnswerPool();

/** `answer` (made for this response: its typed arrays are moved) as JSON: encoded on a thread when it holds many typed-column numbers, else here. */
export function typedJsonResponse(c: Context, answer: object, signal: AbortSignal, pool = answerPool): Response {
  const body = pool.offThread(typedNumbers(answer)) ? pool.body({ kind: 'json', value: answer }, signal, true) : null;
  if (body === null) return jsonResponse(c, answer);
  return c.body(body, 200, { 'Content-Type': 'application/json' });
}

/** A gpu answer (made for this response: its typed arrays are moved) as its column frame: built on a thread when it is large, else here. */
export function gpuColumnsResponse(c: Context, answer: GpuAnswer, signal: AbortSignal, pool = answerPool): Response {
  const body = pool.offThread(typedNumbers(answer)) ? pool.body({ kind: 'gpu_frame', answer }, signal, true) : null;
  if (body === null) return columnsResponse(c, gpuFrame(answer));
  return c.body(body, 200, { 'Content-Type': COLUMNS_MEDIA_TYPE });
}
