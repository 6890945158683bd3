// DumpReader: the read-only facade over a run's `--dump-details` directory (rollout and train dumps,
// the parquet token mirror, the trajectory sidecar and the tokenizer, each read by its own reader beside
// this file). It yields records — a step's samples with their train digests, one sample's tokens, a step's
// conversations — never answers.
import { readdirSync, statSync } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isInside, realpathOfFuture } from '../../formats/fileAccess.ts';
import type { ConversationRecord, RolloutIds, SampleTextRecord, SampleTokenRecord, StepPriority, StepRecords, TrainDigest } from '../model.ts';
import { discoverRolloutIds } from './discovery.ts';
import { RefusedOption, damageOf, NotFound } from '../errors.ts';
import { Lru } from './lru.ts';
import { StepGate, type GateTicket } from './stepGate.ts';
import { approxBytes, approxListBytes, ByteBudgetLru } from '../byteBudget.ts';
import type { RolloutDump, RolloutSample } from './rolloutDump.ts';
import { batchRawRewards, buildTrainRow, checkTrainSamples, type TrainRow } from './trainDump.ts';
import { digestTrainRow } from './trainDigest.ts';
import type { StepRows, TrainStepFiles } from './trainStep.ts';
import { checkId, DumpFiles, isMissing} from './dumpFiles.ts';
import { RolloutDumpReader, type RolloutWorker } from './rolloutReader.ts';
import { TrainDumpReader } from './trainReader.ts';
import { TokenMirror, type SampleTokens } from './tokenMirror.ts';
import { TrajectorySidecar } from './trajectorySidecar.ts';
import { TokenizerReader } from './tokenizerReader.ts';
import { ROLLOUT_DIR, rolloutFile, rolloutNameOf, stepStem } from '../../formats/miles/layout.ts';
import { LaterWrites } from '../derivedCache.ts';

const STEP_CACHE_VERSION = 2;

/** Bytes the decoded records of recent steps may take (a 4,096-sample step weighs ~2.5 MiB); the rest is re-read from the derived cache. */
export const STEP_RECORD_BYTES = 32 * 2 ** 20;

export interface DumpReaderOptions {
  /** Where computed summaries may be cached on disk; never inside the run directory. */
  cacheDir?: string;
  /** At most this many joined steps stay resident (default: as many as fit in `stepRecordBytes`). */
  tensorLru?: number;
  /** Bytes the resident joined steps' records may take together (default STEP_RECORD_BYTES). */
  stepRecordBytes?: number;
  /** Told the run-relative name of each dump file decoded on this thread (tests observe what a read costs). */
  onDecode?: (file: string) => void;
  /** Clock for the freshness rules, in ms (tests). */
  now?: () => number;
  /** Rollout dumps bigger than this many bytes decode on a worker thread (default 16 MiB). */
  decodeOffThreadAbove?: number;
  /** Opcodes per slice of a decode looked at between slices (streamed texts, a step's first samples; tests: small, certain slices). */
  textSliceOpcodes?: number;
  /** How many of a step's first samples a decode worker hands out ahead of the rest (default PREVIEW_FIRST_SAMPLES; 0: none). */
  previewFirstSamples?: number;
}

/** Samples of a step shown ahead of the rest of its dump: a screen of table rows and a scatter, decoded in tens of ms. */
export const PREVIEW_FIRST_SAMPLES = 256;

/** Someone waiting for a step's samples: `first` takes the dump's first samples when they come before the rest. */
interface PreviewWaiter {
  settle: (records: StepRecords, partial: boolean) => void;
  first: boolean;
}

/** One joined step as kept resident: its records (the per-token data is not kept). */
interface JoinedStep {
  stamp: string;
  records: StepRecords;
}

interface SampleRead {
  stamp: string;
  rollout: SampleTokens;
  trainRow: TrainRow | null;
}

/** A step being read: the best priority any asker gave it, and its place in the decode gate once it needs one. */
interface DecodeClaim {
  priority: StepPriority;
  ticket?: GateTicket;
  /** Askers that may still leave (with a signal not yet aborted). */
  leaving: number;
  /** An asker that stays (no signal): the decode is never abandoned. */
  kept: boolean;
  /** Abandons the decode if its turn has not come. */
  abandon?: () => void;
}

/** Every asker of a step left before its decode's turn came: it was never started. */
export class StepAbandoned extends Error {
  override readonly name = 'AbortError';
}

/**
 * About the bytes a step's records hold, weighed from a sample of its samples and digests: walking every one
 * of a 4,096-sample step took ~20 ms before its answer.
 */
function stepRecordBytes(r: StepRecords): number {
  return 64 + approxListBytes(r.samples) + 32 + 24 * r.digests.size + approxListBytes([...r.digests.values()]) + approxBytes(r.rawRewards);
}

/** A step's records as the on-disk cache holds them (JSON has no maps). */
type CachedStep = Omit<StepRecords, 'digests'> & { digests: [number, TrainDigest][] };

export class DumpReader {
  private readonly joinedSteps: ByteBudgetLru<string, JoinedStep>;
  private readonly sampleReads = new Lru<string, SampleRead>(16);
  private readonly failedSteps = new Lru<string, { stamp: string; error: unknown }>(64);
  /** Cold steps decode one at a time (each takes every core and a few hundred MiB). */
  private readonly decodeGate = new StepGate();
  /** The steps being read, by their computation's key: at what priority, and their gate ticket once they need one. */
  private readonly decodeClaims = new Map<string, DecodeClaim>();
  /** Per step (its stem), the askers of a preview waiting for its rollout side to be decoded. */
  private readonly previewWaiters = new Map<string, PreviewWaiter[]>();
  /** A step's first samples while the rest of its rollout dump decodes (see `stepPreview`'s `first`). */
  private readonly firstSamples = new Map<string, StepRecords>();
  /** Steps' records written to the derived cache once no request is being answered (never before an answer). */
  private readonly stepWrites = new LaterWrites();
  private readonly rollouts: RolloutDumpReader;
  private readonly train: TrainDumpReader;
  private readonly mirror: TokenMirror;
  private readonly sidecar: TrajectorySidecar;
  private readonly tokenizer: TokenizerReader;

  private constructor(
    private readonly files: DumpFiles,
    keptSteps: { bytes: number; count: number },
    offThreadAbove: number,
    textSliceOpcodes: number | undefined,
    firstSamples: number,
  ) {
    this.joinedSteps = new ByteBudgetLru(keptSteps.bytes, (s) => stepRecordBytes(s.records), keptSteps.count);
    this.rollouts = new RolloutDumpReader(files, offThreadAbove, textSliceOpcodes, firstSamples);
    // a step's rank file directories are read on the spare decode worker while one waits
    this.train = new TrainDumpReader(files, (paths, listedRegular) => this.rollouts.catalogHelper(paths, listedRegular));
    this.mirror = new TokenMirror(files);
    this.sidecar = new TrajectorySidecar(files);
    this.tokenizer = new TokenizerReader(files);
  }

  get runDir(): string {
    return this.files.runDir;
  }

  static async open(runDir: string, options: DumpReaderOptions = {}): Promise<DumpReader> {
    const dir = resolve(runDir);
    let st;
    try {
      st = await stat(dir);
    } catch (e) {
      if (isMissing(e)) throw new NotFound('the dump directory does not exist');
      throw e;
    }
    if (!st.isDirectory()) throw new RefusedOption('runDir', 'the dump path is not a directory');
    let cacheDir: string | null = null;
    const realDir = await realpath(dir);
    if (options.cacheDir !== undefined) {
      cacheDir = resolve(options.cacheDir);
      // Compared after resolving symlinks: a linked cache folder (or run) must not put a cache file inside the run.
      if (isInside(realDir, realpathOfFuture(cacheDir))) {
        throw new RefusedOption('cacheDir', 'the cache directory must lie outside the run directory (nothing is written inside a run)');
      }
    }
    const lru = options.tensorLru ?? Infinity;
    if (lru !== Infinity && (!Number.isInteger(lru) || lru < 0)) throw new RefusedOption('tensorLru', `tensorLru must be a non-negative integer, got ${lru}`);
    const files = new DumpFiles(dir, realDir, cacheDir, options.onDecode ?? (() => {}), options.now ?? Date.now);
    return new DumpReader(files, { bytes: options.stepRecordBytes ?? STEP_RECORD_BYTES, count: lru }, options.decodeOffThreadAbove ?? 16 * 2 ** 20, options.textSliceOpcodes, options.previewFirstSamples ?? PREVIEW_FIRST_SAMPLES);
  }

  /** Problems with the run's layout met while listing it (names that are not steps, folders that are files). */
  warnings(): string[] {
    return this.files.warnings();
  }

  /**
   * Starts a decode worker for the newest train step's first read ahead of it (see RolloutDumpReader.prepareWorker),
   * at once: the newest step by name from one blocking listing, not the discovery's stat of every step (at a
   * server's first request those wait behind its answer, and the worker's start with them). Whether one started.
   */
  prepareDecodeWorker(): boolean {
    const newest = this.newestTrainStep();
    return newest >= 0 && this.rollouts.prepareWorker(newest, false);
  }

  /**
   * `prepareDecodeWorker`, and then that worker, while it waits for its step, reads the rank file directories
   * of the newest train step the run shows (the catalog a first token read of the step waits for, a thousand
   * file opens on a 1,024-rank step). Whether a worker started.
   */
  getReady(): boolean {
    if (!this.prepareDecodeWorker()) return false;
    // the newest step the run shows (a step still being written is not read ahead)
    void this.rolloutIds()
      .then((ids) => {
        const shown = ids.train.at(-1);
        return shown === undefined ? null : this.train.step(shown);
      })
      .then((step) => step?.prefetch())
      .catch(() => {});
    return true;
  }

  /** The newest train step by its rollout dump's name, from one blocking listing; -1 when there is none. */
  private newestTrainStep(): number {
    let newest = -1;
    try {
      for (const name of readdirSync(join(this.files.runDir, ROLLOUT_DIR))) {
        const step = rolloutNameOf(name);
        if (step !== null && step !== 'not a step' && !step.evaluation && step.id > newest) newest = step.id;
      }
    } catch {
      // no rollout dumps to decode
    }
    return newest;
  }

  /** Whether a decode worker started ahead of need still waits for a step read. */
  get decodeWorkerWaiting(): boolean {
    return this.rollouts.spareWaiting;
  }

  /** Visible train and eval rollout ids (see discovery's freshness rule). */
  rolloutIds(): Promise<RolloutIds> {
    return discoverRolloutIds(this.files.runDir, this.files.now(), (file, problem) => this.files.noteLayout(file, problem));
  }

  /**
   * The step's samples once its rollout side is decoded (no train digests yet: `complete` false), or the
   * complete step when it comes first (known, cached, or joined meanwhile). With `first`, the dump's first
   * samples (whole groups, `partial` true) when a decode worker hands them out before the rest. Starts the
   * step's read as `step` does (one read for all) and fails as it does.
   */
  async stepPreview(rolloutId: number, evaluation = false, signal?: AbortSignal, first = false): Promise<{ records: StepRecords; complete: boolean; partial: boolean }> {
    const stem = stepStem(rolloutId, evaluation);
    const step = this.step(rolloutId, evaluation, 'asked', signal).then((records) => ({ records, complete: true, partial: false }));
    const already = first ? this.firstSamples.get(stem) : undefined;
    if (already) {
      step.catch(() => {});
      return { records: already, complete: false, partial: true };
    }
    let waiter!: PreviewWaiter;
    const early = new Promise<{ records: StepRecords; complete: boolean; partial: boolean }>((r) => (waiter = { settle: (records, partial) => r({ records, complete: false, partial }), first }));
    const waiters = this.previewWaiters.get(stem) ?? [];
    waiters.push(waiter);
    this.previewWaiters.set(stem, waiters);
    try {
      return await Promise.race([step, early]);
    } finally {
      const left = (this.previewWaiters.get(stem) ?? []).filter((w) => w !== waiter);
      if (left.length) this.previewWaiters.set(stem, left);
      else this.previewWaiters.delete(stem);
    }
  }

  /** Hands a step's decoded rollout side to the previews waiting for it. */
  private previewReady(rolloutId: number, evaluation: boolean, dump: RolloutDump): void {
    const stem = stepStem(rolloutId, evaluation);
    this.firstSamples.delete(stem);
    const waiters = this.previewWaiters.get(stem);
    if (!waiters?.length) return;
    const records: StepRecords = { rolloutId, evaluation, samples: dump.samples, digests: new Map(), rawRewards: null };
    for (const w of waiters) w.settle(records, false);
  }

  /** Keeps a step's first samples until the rest is decoded, and hands them to the previews that take them. */
  private previewFirst(rolloutId: number, evaluation: boolean, samples: RolloutSample[]): void {
    const stem = stepStem(rolloutId, evaluation);
    const records: StepRecords = { rolloutId, evaluation, samples, digests: new Map(), rawRewards: null };
    this.firstSamples.set(stem, records);
    for (const w of this.previewWaiters.get(stem) ?? []) if (w.first) w.settle(records, true);
  }

  /**
   * One step's samples in batch order with, for a train step, their train digests and the raw rewards. Steps
   * that must be decoded are decoded one at a time, asked ones before `background` ones. `signal`: the asker
   * may leave; a decode every asker left before its turn never starts (an asker without a signal always stays).
   */
  async step(rolloutId: number, evaluation = false, priority: StepPriority = 'asked', signal?: AbortSignal): Promise<StepRecords> {
    return (await this.joined(rolloutId, evaluation, priority, signal)).records;
  }

  /** One sample's tokens with its per-token values (rollout side from the parquet mirror). */
  async sampleTokens(rolloutId: number, sampleIndex: number, evaluation = false): Promise<SampleTokenRecord> {
    checkId('rollout_id', rolloutId);
    checkId('sample_index', sampleIndex);
    void this.mirror.parquetReader().catch(() => {});
    const texts = this.files.cacheDir ? await this.tokenizer.tokenTexts() : null;
    // Unless texts kept by an earlier process may spare it, the tokenizer loads while the sample is read
    // (the read waits on the files much of the time).
    let tokenizerP = texts && texts.size > 0 ? null : this.tokenizer.runTokenizer();
    const { rollout, trainRow } = await this.sampleRead(rolloutId, evaluation, sampleIndex);
    let decodeToken: ((id: number) => string) | null;
    if (texts && texts.covers(rollout.tokens)) {
      decodeToken = texts.text;
    } else {
      const tokenizer = await (tokenizerP ??= this.tokenizer.runTokenizer());
      const decode = tokenizer ? (id: number) => tokenizer.decodeToken(id) : null;
      decodeToken = decode && texts ? texts.through(decode) : decode;
    }
    return {
      rolloutId,
      sampleIndex,
      evaluation,
      totalLength: rollout.totalLength,
      responseLength: rollout.responseLength,
      tokens: rollout.tokens,
      rolloutLogProbs: rollout.rolloutLogProbs,
      train: trainRow,
      decodeToken,
    };
  }

  /** The rollout side and joined train row of one sample, kept for the next reads of the same sample. */
  private async sampleRead(rolloutId: number, evaluation: boolean, sampleIndex: number): Promise<SampleRead> {
    const key = `${stepStem(rolloutId, evaluation)}:${sampleIndex}`;
    const step = evaluation ? null : await this.train.step(rolloutId);
    // The rank files' catalog is read (or its identities checked on the thread pool) while the mirror opens.
    step?.prefetch();
    const mirrorStamp = (await this.mirror.stamp(rolloutId, evaluation)) ?? 'no mirror';
    const stamp = `${mirrorStamp}\n${step?.stamp ?? ''}`;
    const cached = this.sampleReads.get(key);
    if (cached && cached.stamp === stamp) return cached;
    const rollout = await this.rolloutTokens(rolloutId, evaluation, sampleIndex);
    let trainRow: TrainRow | null = null;
    if (step) {
      try {
        const index = await step.indexFor(sampleIndex, rollout.totalLength);
        const rows = this.train.rowReader(4, false);
        try {
          trainRow = await buildTrainRow(index, sampleIndex, rows.reader(index));
        } finally {
          await rows.close();
        }
      } catch (e) {
        // a damaged rank file: the sample's tokens without their train side, as its step's table has them
        this.files.readAround(e, trainSideLeftOut(rolloutId));
      }
    }
    const read = { stamp, rollout, trainRow };
    this.sampleReads.set(key, read);
    return read;
  }

  /** The rollout side of one sample: from the parquet mirror, else (mirror missing or foreign) the `.pt`. */
  private async rolloutTokens(rolloutId: number, evaluation: boolean, sampleIndex: number): Promise<SampleTokens> {
    const unknown = () => new NotFound(`unknown sample_index ${sampleIndex} in rollout ${rolloutId}`);
    const fromMirror = await this.mirror.sampleTokens(rolloutId, evaluation, sampleIndex, unknown);
    return fromMirror ?? this.rollouts.sampleTokens(rolloutId, evaluation, sampleIndex, unknown);
  }

  /** One step's recorded conversations (trajectory sidecar rows, as written) by sample id; null without a sidecar. */
  conversations(rolloutId: number, evaluation = false): Promise<ReadonlyMap<number, ConversationRecord> | null> {
    return this.sidecar.conversations(rolloutId, evaluation);
  }

  /** Every sample's searchable text (prompt, response, label, metadata, ids), in batch order. */
  async sampleTexts(rolloutId: number, evaluation = false): Promise<SampleTextRecord[]> {
    const out: SampleTextRecord[] = [];
    for await (const batch of this.sampleTextBatches(rolloutId, evaluation)) for (const t of batch) out.push(t);
    return out;
  }

  /**
   * The same texts in batch order, handed out in batches while the dump is still being decoded (a slice of
   * decoding at a time, the event loop served between slices): the first samples are searched long before
   * the last ones are read.
   */
  sampleTextBatches(rolloutId: number, evaluation = false): AsyncGenerator<SampleTextRecord[]> {
    return this.rollouts.sampleTextBatches(rolloutId, evaluation);
  }

  /** Drops every cache and closes open files, once what it asked to keep in the cache directory is written. */
  async close(): Promise<void> {
    await this.cacheWritten().catch(() => {});
    this.joinedSteps.clear();
    this.train.clear();
    this.sampleReads.clear();
    this.mirror.clear();
    this.rollouts.clear();
    this.sidecar.clear();
  }

  /** Settles once the train step catalogs, token texts and mirror layouts asked to be saved so far are written (tests). */
  async cacheWritten(): Promise<void> {
    await this.train.saved();
    await this.tokenizer.saved();
    await this.mirror.settled();
    await this.stepWrites.settled();
  }

  /** Bytes a cold read of a train step decodes (its rollout dump and its rank files), counted until `atMost` is passed. */
  async stepBytes(rolloutId: number, atMost = Infinity): Promise<number> {
    checkId('rollout_id', rolloutId);
    const size = (name: string): number => {
      try {
        return statSync(join(this.files.runDir, name)).size;
      } catch {
        return 0; // a file gone or unreadable is the step read's to say
      }
    };
    let bytes = size(rolloutFile(rolloutId, false));
    // Blocking stats, as when a step is stamped: a promise round trip per rank file costs far more.
    for (const f of await this.train.fileNames(rolloutId)) {
      if (bytes > atMost) break;
      bytes += size(f.name);
    }
    return bytes;
  }

  // ---- joined steps -------------------------------------------------------------------------------

  /** The joined step (rollout samples + train digests), from the resident LRU, the disk cache or the dumps. */
  private async joined(rolloutId: number, evaluation: boolean, priority: StepPriority, signal?: AbortSignal): Promise<JoinedStep> {
    checkId('rollout_id', rolloutId);
    const key = stepStem(rolloutId, evaluation);
    const rollout = await this.rollouts.stamp(rolloutId, evaluation);
    const trainFiles = evaluation ? [] : await this.train.fileNames(rolloutId);
    const stamp = [rollout.stamp, ...trainFiles.map((f) => f.name)].join('\n');
    const cached = this.joinedSteps.get(key);
    if (cached && cached.stamp === stamp) return cached;
    // A damaged step answers its failure again without another decode until one of its files changes: a
    // hostile dump asked for repeatedly costs its decode once.
    const failed = this.failedSteps.get(key);
    if (failed && failed.stamp === stamp) throw failed.error;
    if (signal?.aborted) throw new StepAbandoned(`${key}: no one waits for it`);
    const onceKey = `joined:${key}:${stamp}`;
    // An asker joining a background read of the same step lifts it ahead of the other background reads.
    const claim = this.decodeClaims.get(onceKey);
    if (claim && priority === 'asked') {
      claim.priority = 'asked';
      claim.ticket?.ask();
    }
    const joinedP = this.files.once(onceKey, async () => {
      const mine: DecodeClaim = { priority, leaving: 0, kept: false };
      this.decodeClaims.set(onceKey, mine);
      try {
        const fromDisk = await this.readStepCache(key, rollout.name, trainFiles);
        const step = fromDisk ? { records: fromDisk, stamp } : await this.decodeInTurn(mine, () => this.computeJoined(rolloutId, evaluation, stamp, rollout.name, trainFiles));
        this.joinedSteps.set(key, step);
        return step;
      } catch (e) {
        if (damageOf(e) !== null) this.failedSteps.set(key, { stamp, error: e });
        throw e;
      } finally {
        this.decodeClaims.delete(onceKey);
      }
    });
    // count this asker: one with a signal may leave, one without stays
    const mine = this.decodeClaims.get(onceKey);
    if (mine) {
      if (!signal) mine.kept = true;
      else {
        mine.leaving++;
        signal.addEventListener(
          'abort',
          () => {
            if (--mine.leaving === 0 && !mine.kept) mine.abandon?.();
          },
          { once: true },
        );
      }
    }
    return joinedP;
  }

  /** Runs a step's decode when the gate lets it (one step at a time), at the claim's priority; abandoned before its turn, never. */
  private async decodeInTurn<T>(claim: DecodeClaim, decode: () => Promise<T>): Promise<T> {
    const ticket = (claim.ticket = this.decodeGate.enter(claim.priority));
    let admitted = false;
    if (claim.leaving === 0 && !claim.kept) {
      ticket.release();
      throw new StepAbandoned('every asker of this step left before its decode began');
    }
    const abandoned = new Promise<never>((_, reject) => {
      claim.abandon = () => {
        if (!admitted) reject(new StepAbandoned('every asker of this step left before its decode began'));
      };
    });
    abandoned.catch(() => {});
    try {
      await Promise.race([ticket.turn, abandoned]);
      admitted = true;
      return await decode();
    } finally {
      ticket.release();
    }
  }

  private async computeJoined(
    rolloutId: number,
    evaluation: boolean,
    stamp: string,
    rolloutName: string,
    trainFiles: { name: string }[],
  ): Promise<JoinedStep> {
    // The rollout dump decodes (on a worker) while the train side is joined here, the worker joining its
    // share of the rank files once the dump is done; the two sides meet by sample index.
    const worker = await this.rollouts.decodeWorker(rolloutName, rolloutId, evaluation);
    try {
      return await this.joinStep(rolloutId, evaluation, stamp, rolloutName, trainFiles, worker);
    } finally {
      worker?.close();
    }
  }

  private async joinStep(
    rolloutId: number,
    evaluation: boolean,
    stamp: string,
    rolloutName: string,
    trainFiles: { name: string }[],
    worker: RolloutWorker | null,
  ): Promise<JoinedStep> {
    const dumpP: Promise<RolloutDump> = worker
      ? worker.dump.then((d) => d ?? this.rollouts.load(rolloutId, evaluation))
      : this.rollouts.load(rolloutId, evaluation);
    worker?.first.then((samples) => samples && this.previewFirst(rolloutId, evaluation, samples));
    dumpP.then((dump) => this.previewReady(rolloutId, evaluation, dump)).catch(() => this.firstSamples.delete(stepStem(rolloutId, evaluation)));
    // The sources are stamped before they are read (a file rewritten meanwhile invalidates the cached step).
    const sourcesP = this.files.cacheDir ? this.sourceStamps(rolloutName, trainFiles) : null;
    sourcesP?.catch(() => {});
    const digests = new Map<number, TrainDigest>();
    let trainUnread = false;
    let train: TrainStepFiles | null = null;
    try {
      train = evaluation ? null : await this.train.step(rolloutId);
    } finally {
      if (!train) worker?.helper.cancel();
    }
    let raw: (number | null)[] | null = null;
    if (train) {
      // Someone waits for the step's samples: the rollout dump decodes alone first, and the preview is
      // answered before the rank files take this thread.
      if (this.previewWaiters.has(stepStem(rolloutId, evaluation))) {
        await dumpP.catch(() => {});
        await new Promise((r) => setImmediate(r));
      }
      // A damaged rank file leaves the step without its train side (said among the run's warnings); the
      // rollout side is read whole all the same. A rollout dump's own failure is the step's.
      const trainDamaged = (e: unknown): void => {
        this.files.readAround(e, trainSideLeftOut(rolloutId));
        worker?.helper.cancel();
        trainUnread = true;
      };
      let joinedTrain: { rows: StepRows; joined: Map<number, TrainDigest> } | null = null;
      try {
        joinedTrain = await train.joinAll(digestTrainRow, worker?.helper);
      } catch (e) {
        trainDamaged(e);
      }
      const dump = await dumpP;
      if (joinedTrain) {
        try {
          checkTrainSamples(joinedTrain.rows, new Set(dump.samples.flatMap((s) => (s.index === null ? [] : [s.index]))));
          for (const [s, d] of joinedTrain.joined) digests.set(s, d);
          raw = batchRawRewards(joinedTrain.rows.rawRewards, dump.samples.length);
        } catch (e) {
          trainDamaged(e);
        }
      }
    }
    const dump = await dumpP;
    const records: StepRecords = { rolloutId, evaluation, samples: dump.samples, digests, rawRewards: raw };
    // kept for the next process after the answers that wait for it (a megabyte of JSON for a 4,096-sample step);
    // a step read without its damaged train side is not: the next process reads it, and says so, again
    if (sourcesP && !trainUnread) this.stepWrites.request(() => this.writeStepCache(stepStem(rolloutId, evaluation), sourcesP, records), false);
    return { stamp, records };
  }

  // ---- on-disk step cache (only with cacheDir) ----------------------------------------------------

  private async sourceStamps(rolloutName: string, trainFiles: { name: string }[]): Promise<Record<string, number>> {
    // Blocking stats: a step of 1,024 rank files is stamped in a few ms, a promise round trip per file costs far more.
    const out: Record<string, number> = {};
    for (const name of [rolloutName, ...trainFiles.map((f) => f.name)]) out[name] = statSync(join(this.files.runDir, name)).mtimeMs;
    return out;
  }

  private async readStepCache(key: string, rolloutName: string, trainFiles: { name: string }[]): Promise<StepRecords | null> {
    const cacheDir = this.files.cacheDir;
    if (!cacheDir) return null;
    let cached: { version: number; sources: Record<string, number>; step: CachedStep };
    try {
      cached = JSON.parse(await readFile(join(cacheDir, `rollout_${key}.step.json`), 'utf8'));
    } catch {
      return null;
    }
    if (cached.version !== STEP_CACHE_VERSION) return null;
    const sources = await this.sourceStamps(rolloutName, trainFiles);
    if (JSON.stringify(sources) !== JSON.stringify(cached.sources)) return null;
    const { digests, ...rest } = cached.step;
    return { ...rest, digests: new Map(digests) };
  }

  private async writeStepCache(key: string, sourcesP: Promise<Record<string, number>>, step: StepRecords): Promise<void> {
    let sources: Record<string, number>;
    try {
      sources = await sourcesP;
    } catch {
      return; // a file that cannot be stamped now is stamped by the next read
    }
    const cached: CachedStep = { ...step, digests: [...step.digests] };
    await this.files.derived.write(`rollout_${key}.step.json`, () => JSON.stringify({ version: STEP_CACHE_VERSION, sources, step: cached }));
  }
}

/** What a damaged rank file leaves of its step. */
function trainSideLeftOut(rolloutId: number): string {
  return `step ${rolloutId} is shown without its train side`;
}
