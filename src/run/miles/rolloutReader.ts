// The rollout dumps (`rollout_data/{id}.pt`): a step's samples decoded here or on a worker thread that then
// helps join the train side, the samples' searchable texts streamed while decoding, one sample's tokens
// when the parquet mirror cannot give them.
import { statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { advanceFor, openTorchFile, startTorchDecode } from '../../formats/torch/load.ts';
import type { PyValue } from '../../formats/torch/value.ts';
import { startModuleWorker } from '../../ownFiles.ts';
import type { SampleTextRecord, TrainDigest } from '../model.ts';
import { DumpInconsistent, NotFound } from '../errors.ts';
import { Lru } from './lru.ts';
import { decodeRolloutDump, RECORDS_ONLY, type RolloutDump, type RolloutSample } from './rolloutDump.ts';
import { dumpSampleText, dumpSamples, pendingSamples } from './sampleText.ts';
import type { TorchDocument } from './torchDocument.ts';
import type { CatalogHelper, GroupRawRewards, JoinedGroup, JoinHelper, QuickCatalog } from './trainStep.ts';
import type { WorkerError } from './rolloutDecodeWorker.ts';
import { checkId, isMissing, type DumpFiles } from './dumpFiles.ts';
import type { SampleTokens } from './tokenMirror.ts';
import { rolloutFile, stepStem } from '../../formats/miles/layout.ts';
import { milesGlobal } from './globals.ts';

/**
 * Work done on a streamed rollout decode between two hand-outs of its finished samples (ms): short at first
 * (the first samples are searched soon), doubling up to the longest (fewer hand-outs for the rest).
 */
const TEXT_SLICE_MS = { first: 8, longest: 64 };

/** Opcodes a decode worker decodes between two looks at the samples completed so far (about a hundred samples). */
const FIRST_SAMPLES_SLICE_OPCODES = 16384;

/** A rollout dump decoding on a worker thread (see `RolloutDumpReader.decodeWorker`). */
export interface RolloutWorker {
  dump: Promise<RolloutDump | null>;
  /** The dump's first samples (whole groups), posted while the rest decodes; null when none come before the whole dump. */
  first: Promise<RolloutSample[] | null>;
  helper: JoinHelper<TrainDigest>;
  close(): void;
}

export class RolloutDumpReader {
  private readonly fallbacks = new Lru<string, RolloutDump>(2);
  /** A decode worker started ahead of the first step read (its modules loaded), waiting for its dump. */
  private spare: Worker | null = null;
  private spareStarted = false;
  /** Catalog reads asked of a spare so far (each answer names its read). */
  private catalogReads = 0;
  private closed = false;

  constructor(
    private readonly files: DumpFiles,
    private readonly offThreadAbove: number,
    private readonly textSliceOpcodes: number | undefined,
    /** How many of a dump's first samples a decode worker posts ahead of the whole dump (0: none). */
    private readonly firstSamples: number,
  ) {}

  /** The dump's run-relative name and a stamp of its size and modification time. */
  async stamp(rolloutId: number, evaluation: boolean): Promise<{ name: string; stamp: string; mtimeMs: number }> {
    const name = rolloutFile(rolloutId, evaluation);
    try {
      const st = await this.files.recentStat(await this.files.runPath(name));
      return { name, stamp: `${st.mtimeMs}:${st.size}`, mtimeMs: st.mtimeMs };
    } catch (e) {
      if (isMissing(e)) throw new NotFound(`${name} not found: no ${evaluation ? 'eval ' : ''}rollout ${rolloutId} in this run`);
      throw e;
    }
  }

  private async openDocument(name: string, withTokens: boolean): Promise<TorchDocument> {
    // Number lists decode as typed arrays: far less memory and collector work; without tokens, the
    // per-token lists as their lengths alone and long texts unread.
    this.files.onDecode(name);
    return openTorchFile(join(this.files.runDir, name), withTokens ? { typedLists: true, allowGlobal: milesGlobal } : RECORDS_ONLY).catch(async (e) => {
      throw await this.files.loadFailure(name, e);
    });
  }

  async load(rolloutId: number, evaluation: boolean, withTokens = false): Promise<RolloutDump> {
    const name = rolloutFile(rolloutId, evaluation);
    const doc = await this.openDocument(name, withTokens);
    try {
      return decodeRolloutDump(doc.value, { rolloutId, evaluation, file: name, withTokens });
    } catch (e) {
      if (e instanceof DumpInconsistent) throw e;
      throw await this.files.loadFailure(name, e);
    } finally {
      await doc.close();
    }
  }

  /** One sample's rollout side from the dump itself (decoded once, kept for the next read of the same step). */
  async sampleTokens(rolloutId: number, evaluation: boolean, sampleIndex: number, unknown: () => Error): Promise<SampleTokens> {
    const key = stepStem(rolloutId, evaluation);
    let dump = this.fallbacks.get(key);
    if (!dump) {
      await this.stamp(rolloutId, evaluation);
      dump = await this.load(rolloutId, evaluation, true);
      this.fallbacks.set(key, dump);
    }
    const s = dump.samples.find((x) => x.index === sampleIndex);
    if (!s) throw unknown();
    return {
      totalLength: s.totalLength,
      responseLength: s.responseLength,
      tokens: s.tokens ?? new Int32Array(0),
      rolloutLogProbs: s.rolloutLogProbs ?? null,
    };
  }

  /**
   * The samples' texts in batch order, handed out in batches while the dump is still being decoded (a slice
   * of decoding at a time, the event loop served between slices): the first samples are searched long before
   * the last ones are read.
   */
  async *sampleTextBatches(rolloutId: number, evaluation = false): AsyncGenerator<SampleTextRecord[]> {
    checkId('rollout_id', rolloutId);
    const { name } = await this.stamp(rolloutId, evaluation);
    this.files.onDecode(name);
    const decode = await startTorchDecode(join(this.files.runDir, name), { typedLists: true, allowGlobal: milesGlobal }).catch(async (e: unknown) => {
      throw await this.files.loadFailure(name, e);
    });
    // The samples handed out so far: the finished list must begin with them.
    const streamed: PyValue[] = [];
    let sliceMs = TEXT_SLICE_MS.first;
    try {
      for (;;) {
        const batch: SampleTextRecord[] = [];
        let finished = false;
        try {
          const file = this.textSliceOpcodes ? decode.advance(this.textSliceOpcodes) : advanceFor(decode, sliceMs);
          sliceMs = Math.min(2 * sliceMs, TEXT_SLICE_MS.longest);
          finished = file !== null;
          const samples = file ? dumpSamples(file.value, name) : pendingSamples(decode.pending());
          if (file && streamed.some((s, i) => samples[i] !== s)) throw new DumpInconsistent(name, 'the samples list changed while it was decoded');
          for (let i = streamed.length; i < samples.length; i++) {
            streamed.push(samples[i]);
            const text = dumpSampleText(samples[i], i, name);
            if (text) batch.push(text);
          }
        } catch (e) {
          if (e instanceof DumpInconsistent) throw e;
          throw await this.files.loadFailure(name, e);
        }
        if (batch.length > 0) yield batch;
        if (finished) return;
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      await decode.close();
    }
  }

  /**
   * For a rollout dump big enough, a worker thread that decodes it while this
   * thread joins the train side, then helps with that join; null otherwise. `dump` is null when the worker
   * could not run (the caller then decodes here). `close()` ends the worker.
   */
  async decodeWorker(name: string, rolloutId: number, evaluation: boolean): Promise<RolloutWorker | null> {
    const runDir = this.files.runDir;
    const size = await stat(join(runDir, name)).then((st) => st.size, () => 0);
    if (size <= this.offThreadAbove) return null;
    const job = { path: join(runDir, name), file: name, rolloutId, evaluation, firstSamples: this.firstSamples, sliceOpcodes: this.textSliceOpcodes ?? FIRST_SAMPLES_SLICE_OPCODES };
    const spare = this.spare;
    this.spare = null;
    const worker = spare ?? startModuleWorker('run/miles/rolloutDecodeWorker', { workerData: job });
    if (spare) {
      spare.ref();
      spare.postMessage({ job });
    }
    type Done = { groups: JoinedGroup<TrainDigest>[]; raw?: GroupRawRewards; error?: { i: number; error: WorkerError } };
    let settleDump!: (m: { dump?: RolloutDump; error?: WorkerError } | null) => void;
    let settleTrain!: (m: Done) => void;
    let settleFirst!: (samples: RolloutSample[] | null) => void;
    const first = new Promise<RolloutSample[] | null>((r) => (settleFirst = r));
    const dumpMessage = new Promise<{ dump?: RolloutDump; error?: WorkerError } | null>((r) => (settleDump = r));
    const trainDone = new Promise<Done>((r) => (settleTrain = r));
    worker.on('message', (m: { dump?: RolloutDump; first?: RolloutSample[]; error?: WorkerError; trainDone?: Done; catalogRead?: unknown }) => {
      if (m.catalogRead) return; // a catalog read asked of it while it was spare (see catalogHelper)
      if (m.first) return settleFirst(m.first);
      if (m.trainDone) settleTrain(m.trainDone);
      else {
        settleFirst(null);
        settleDump(m);
      }
    });
    // A worker that stops early has delivered nothing more: the main thread does the rest.
    const stopped = (): void => {
      settleFirst(null);
      settleDump(null);
      settleTrain({ groups: [] });
    };
    worker.once('error', stopped);
    worker.once('exit', stopped);
    const dump = dumpMessage.then(async (m) => {
      if (!m) return null;
      if (m.dump) return m.dump;
      const { name: kind, message: text, code } = m.error!;
      if (kind === 'DumpInconsistent') throw new DumpInconsistent(name, text.replace(`${name}: `, ''));
      throw await this.files.loadFailure(name, Object.assign(new Error(text), { name: kind, code }));
    });
    const helper: JoinHelper<TrainDigest> = {
      start: (runDir, groups, counter) => worker.postMessage({ train: { runDir, groups, counter } }),
      finished: async () => {
        const done = await trainDone;
        if (!done.error) return done;
        const { i, error } = done.error;
        const e =
          error.name === 'DumpInconsistent' && error.file !== undefined
            ? new DumpInconsistent(error.file, error.message.slice(error.file.length + 2))
            : Object.assign(new Error(error.message), { name: error.name, code: error.code });
        return { groups: done.groups, raw: done.raw, error: { i, error: e } };
      },
      cancel: () => worker.postMessage({ train: null }),
    };
    return { dump, first, helper, close: () => void worker.terminate() };
  }

  /**
   * Starts one decode worker ahead of need when a step's rollout dump (the newest) is decoded off this thread:
   * the first step read then does not wait for a thread to start and load its modules. Once only; an idle
   * spare never keeps the process alive.
   */
  prepareWorker(rolloutId: number, evaluation: boolean): boolean {
    if (this.spareStarted) return false;
    this.spareStarted = true;
    let size = 0;
    try {
      size = statSync(join(this.files.runDir, rolloutFile(rolloutId, evaluation))).size;
    } catch {
      return false;
    }
    if (size <= this.offThreadAbove || this.closed) return false;
    const worker = startModuleWorker('run/miles/rolloutDecodeWorker');
    worker.unref();
    worker.once('exit', () => {
      if (this.spare === worker) this.spare = null;
    });
    worker.on('error', () => {});
    this.spare = worker;
    return true;
  }

  /**
   * The spare decode worker, while one waits for its dump, reading a train step's rank file directories
   * alongside this thread (see TrainStepFiles' catalog); null without one. Its dump, once handed over, waits
   * for the read (tens of ms).
   */
  catalogHelper(paths: string[], listedRegular: boolean[]): CatalogHelper | null {
    const worker = this.spare;
    if (!worker) return null;
    const id = ++this.catalogReads;
    const counter = new Int32Array(new SharedArrayBuffer(4));
    const finished = new Promise<ReadonlyMap<number, QuickCatalog | null>>((resolve) => {
      const settle = (files: [number, QuickCatalog | null][]): void => {
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        resolve(new Map(files));
      };
      const onMessage = (m: { catalogRead?: { id: number; files: [number, QuickCatalog | null][] } }): void => {
        if (m?.catalogRead?.id === id) settle(m.catalogRead.files);
      };
      // A worker that stopped delivered nothing: this thread reads what it took.
      const onExit = (): void => settle([]);
      worker.on('message', onMessage);
      worker.once('exit', onExit);
    });
    worker.postMessage({ catalog: { id, paths, listedRegular, counter } });
    return { counter, finished };
  }

  /** Whether a decode worker started ahead of need still waits for its dump. */
  get spareWaiting(): boolean {
    return this.spare !== null;
  }

  clear(): void {
    this.fallbacks.clear();
    this.closed = true;
    void this.spare?.terminate();
    this.spare = null;
  }
}
