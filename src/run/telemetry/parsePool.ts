// Worker threads that parse cold partition files next to the main thread, answered synchronously
// (the store's API is synchronous): results come back over a MessagePort read with
// receiveMessageOnPort, completion is signalled through a shared counter (Atomics.wait).
import { availableParallelism } from 'node:os';
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { FROM_SOURCE, moduleUrl } from '../../ownFiles.ts';
import type { ParseJob } from './parseJob.ts';
import { wantThread } from '../foreground.ts';
import type { ParseResult } from '../../formats/columns/parsedColumns.ts';

/**
 * Parsing threads by default: one per core, at most two (window answers and the warm-up parse on them while
 * the main thread answers requests; on one core there are none and the main thread parses).
 */
export function defaultParseWorkers(): number {
  const cores = availableParallelism();
  return cores < 2 ? 0 : Math.min(2, cores);
}

// Plain CommonJS: the worker registers the TypeScript loader itself when the sources run as .ts.
const WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const flag = new Int32Array(workerData.flag);
const port = workerData.port;
(async () => {
  try {
    if (workerData.tsx) (await import(workerData.tsx)).register();
    const mod = await import(workerData.job);
    const ctx = new mod.ParseContext();
    if (workerData.inFlight) ctx.requestsInFlight = new Int32Array(workerData.inFlight);
    if (workerData.wanted) ctx.threadWanted = new Int32Array(workerData.wanted);
    // a warm-up parse leaves a whole hour's columns behind: collected right away, an idle thread holds none of it
    require('node:v8').setFlagsFromString('--expose-gc');
    const gc = require('node:vm').runInNewContext('gc');
    parentPort.on('message', (job) => {
      try {
        if (job.memory === true) {
          port.postMessage({ ok: true, result: process.memoryUsage().arrayBuffers });
        } else {
          const r = mod.runParseJob(ctx, job);
          port.postMessage({ ok: true, result: r.result }, r.transfer);
        }
      } catch (err) {
        port.postMessage({ ok: false, error: String((err && err.stack) || err) });
      }
      Atomics.add(flag, 1, 1);
      Atomics.notify(flag, 1);
      // what a parse read (its file's bytes, a whole hour's columns when persisted) is garbage now; an idle
      // thread's small heap would not be collected for a long while, and its buffers stay resident until it is
      if (job.memory !== true) gc();
    });
    Atomics.store(flag, 0, 1);
  } catch (err) {
    Atomics.store(flag, 0, -1);
  }
  Atomics.notify(flag, 0);
})();
`;

interface Slot {
  worker: Worker;
  port: MessagePort;
  /** [0]: 1 ready, -1 failed to start; [1]: jobs finished. */
  flag: Int32Array;
  busy: boolean;
  expect: number;
  broken: boolean;
}

export type SlotHandle = number;

export class ParsePool {
  private readonly slots: Slot[] = [];
  /** Reads waiting for a thread of this pool (its threads' warm-up parses do not pause meanwhile); shared with them. */
  private readonly wanted = new Int32Array(new SharedArrayBuffer(4));

  /** `inFlight`: the server's requests in flight (a Foreground's), which the threads' warm-up parses pause for. */
  constructor(
    size: number,
    private readonly inFlight: Int32Array | null = null,
  ) {
    if (size <= 0) return;
    let tsx: string | null = null;
    try {
      tsx = FROM_SOURCE ? import.meta.resolve('tsx/esm/api') : null;
    } catch {
      return; // no TypeScript loader to give the worker: parse on the main thread only
    }
    const job = moduleUrl('run/telemetry/parseJob');
    for (let i = 0; i < size; i++) {
      const flag = new Int32Array(new SharedArrayBuffer(8));
      const { port1, port2 } = new MessageChannel();
      try {
        const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { flag: flag.buffer, port: port2, tsx, job, inFlight: inFlight?.buffer ?? null, wanted: this.wanted.buffer }, transferList: [port2] });
        worker.unref();
        // a thread that failed or went away takes no job, and the one it held is failed, not awaited forever
        const gone = (): void => void Atomics.store(flag, 0, -1);
        worker.on('error', gone);
        worker.on('exit', gone);
        this.slots.push({ worker, port: port1, flag, busy: false, expect: 0, broken: false });
      } catch {
        port1.close();
      }
    }
  }

  /** Threads started or starting (not failed, not gone). */
  get size(): number {
    return this.slots.filter((s) => !s.broken && Atomics.load(s.flag, 0) !== -1).length;
  }

  /** Blocks until every worker has started (or failed to), at most `timeoutMs`; returns how many are ready. */
  waitReady(timeoutMs = 30_000): number {
    const deadline = Date.now() + timeoutMs;
    for (const s of this.slots) {
      while (Atomics.load(s.flag, 0) === 0 && Date.now() < deadline) Atomics.wait(s.flag, 0, 0, 50);
    }
    return this.slots.filter((s) => Atomics.load(s.flag, 0) === 1 && !s.broken).length;
  }

  /**
   * Says a request's read waits for a thread (every one busy: `true`) or no longer does (`false`): a paused warm-up
   * parse goes on meanwhile, so the thread it holds frees up within its file instead of after its pause.
   */
  waitingForThread(waiting: boolean): void {
    if (this.inFlight !== null) wantThread(this.wanted, this.inFlight, waiting ? 1 : -1);
  }

  /** A started, idle worker, or -1 (never waits for one to start). */
  idle(): SlotHandle {
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s.busy && !s.broken && Atomics.load(s.flag, 0) === 1) return i;
    }
    return -1;
  }

  submit(slot: SlotHandle, job: ParseJob): void {
    const s = this.slots[slot];
    s.busy = true;
    s.expect = Atomics.load(s.flag, 1) + 1;
    s.worker.postMessage(job);
  }

  /** Bytes of buffers a started, idle thread made and holds (tests), blocking at most `timeoutMs`; null if it cannot say. */
  threadBufferBytes(slot: SlotHandle, timeoutMs = 10_000): number | null {
    const s = this.slots[slot];
    if (s === undefined || s.busy || s.broken) return null;
    s.busy = true;
    s.expect = Atomics.load(s.flag, 1) + 1;
    s.worker.postMessage({ memory: true });
    const r = this.wait(slot, timeoutMs);
    return r === 'failed' ? null : (r as unknown as number);
  }

  /** The slot's result if it is done (null = still working). A failed job yields `'failed'`. */
  poll(slot: SlotHandle): ParseResult | 'failed' | null {
    const s = this.slots[slot];
    if (!s.busy) return 'failed';
    if (Atomics.load(s.flag, 1) < s.expect) {
      if (Atomics.load(s.flag, 0) !== -1) return null;
      s.broken = true;
      s.busy = false;
      return 'failed';
    }
    return this.take(s);
  }

  /** Blocks until the slot's job is done, at most `timeoutMs`; a worker that overruns is retired. */
  wait(slot: SlotHandle, timeoutMs = 120_000): ParseResult | 'failed' {
    const s = this.slots[slot];
    if (!s.busy) return 'failed';
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const done = Atomics.load(s.flag, 1);
      if (done >= s.expect) return this.take(s);
      if (Atomics.load(s.flag, 0) === -1 || Date.now() > deadline) {
        s.broken = true;
        s.busy = false;
        void s.worker.terminate();
        return 'failed';
      }
      Atomics.wait(s.flag, 1, done, 100);
    }
  }

  private take(s: Slot): ParseResult | 'failed' {
    s.busy = false;
    const m = receiveMessageOnPort(s.port)?.message as { ok: boolean; result?: ParseResult } | undefined;
    return m?.ok && m.result ? m.result : 'failed';
  }

  close(): void {
    for (const s of this.slots) {
      s.broken = true;
      s.port.close();
      void s.worker.terminate();
    }
  }
}
