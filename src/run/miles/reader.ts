// DumpReader: the read-only facade over a run's `--dump-details` directory (rollout and train dumps,
// the parquet token mirror, the trajectory sidecar and the tokenizer). It yields records — a step's samples
// with their train digests, one sample's tokens, a step's conversations — never answers.
import { readFileSync, type Stats } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { confinedPath, fileIdentity, fileKind, isInside, readRegularFile } from '../../formats/fileAccess.ts';
import type { ParquetFile, ParquetRow } from '../../formats/parquet.ts';
import { advanceFor, openTorchFile, startTorchDecode } from '../../formats/torch/load.ts';
import { tensorNumbersFromBytes } from '../../formats/torch/tensorData.ts';
import { Tensor, type PyValue } from '../../formats/torch/value.ts';
import { ZipArchive } from '../../formats/zip.ts';
import { startModuleWorker } from '../../ownFiles.ts';
import type { ConversationRecord, RolloutIds, SampleTokenRecord, StepRecords, TrainDigest } from '../model.ts';
import type { RunTokenizer } from '../tokenizer.ts';
import { discoverRolloutIds, FRESH_SECONDS } from './discovery.ts';
import { BadArgument, damageOf, DumpInconsistent, DumpStillWriting, NotFound } from '../errors.ts';
import { Lru } from './lru.ts';
import { DerivedCache, LaterWrites } from '../derivedCache.ts';
import { TokenTexts } from './tokenTexts.ts';
import { decodeRolloutDump, PER_TOKEN_LISTS, type RolloutDump } from './rolloutDump.ts';
import { dumpSampleText, dumpSamples, pendingSamples, type DumpedSampleText } from './sampleText.ts';
import {
  batchRawRewards,
  buildTrainRow,
  checkTrainSamples,
  CP_SHARDED_FIELDS,
  rowValue,
  type RowFieldReader,
  type TokenField,
  type TrainIndex,
  type TrainRow,
} from './trainDump.ts';
import { openTorchDocument, readNumbers, type TorchDocument } from './torchDocument.ts';
import { digestTrainRow } from './trainDigest.ts';
import {
  TrainStepFiles,
  type JoinedGroup,
  type JoinHelper,
  type RankFileName,
  type StepCatalog,
  type StepCatalogStore,
} from './trainStep.ts';
import type { WorkerError } from './rolloutDecodeWorker.ts';

/** Columns of `dashboard_columns/rollout_*.parquet`; a mirror with another column set is not trusted. */
export const ROLLOUT_COLUMNS = ['sample_index', 'response_length', 'total_length', 'tokens', 'loss_mask', 'rollout_log_probs'];
/** The mirror columns a token read decodes (the loss mask comes from the train side). */
const MIRROR_ROW_COLUMNS = ['response_length', 'total_length', 'tokens', 'rollout_log_probs'];
const STEP_CACHE_VERSION = 2;
const TRAIN_CATALOG_VERSION = 1;
const MIRROR_LAYOUT_VERSION = 1;
/** Rank files up to this size are read whole when a step is joined (most of their storages are needed). */
const WHOLE_RANK_FILE_BELOW = 64 * 2 ** 20;
/**
 * Work done on a streamed rollout decode between two hand-outs of its finished samples (ms): short at first
 * (the first samples are searched soon), doubling up to the longest (fewer hand-outs for the rest).
 */
const TEXT_SLICE_MS = { first: 8, longest: 64 };
/** The per-token fields of a train row (see buildTrainRow). */
const ROW_TOKEN_FIELDS: readonly TokenField[] = [...CP_SHARDED_FIELDS, 'loss_masks'];
/** How long a file's stat answer is trusted before a warm read re-checks it. */
const STAT_REUSE_MS = 1000;

export interface DumpReaderOptions {
  /** Where computed summaries may be cached on disk; never inside the run directory. */
  cacheDir?: string;
  /** How many joined steps stay resident (default 2). */
  tensorLru?: number;
  /** Told the run-relative name of each dump file decoded on this thread (tests observe what a read costs). */
  onDecode?: (file: string) => void;
  /** Clock for the freshness rules, in ms (tests). */
  now?: () => number;
  /** Rollout dumps bigger than this many bytes decode on a worker thread (default 16 MiB). */
  decodeOffThreadAbove?: number;
  /** Opcodes per slice of a streamed text decode instead of a slice of time (tests: small, certain slices). */
  textSliceOpcodes?: number;
}

/** One joined step as kept resident: its records (the per-token data is not kept). */
interface JoinedStep {
  stamp: string;
  records: StepRecords;
}

interface SampleRead {
  stamp: string;
  rollout: { totalLength: number; responseLength: number; tokens: ArrayLike<number>; rolloutLogProbs: ArrayLike<number> | null };
  trainRow: TrainRow | null;
}

/** A step's records as the on-disk cache holds them (JSON has no maps). */
type CachedStep = Omit<StepRecords, 'digests'> & { digests: [number, TrainDigest][] };

interface MirrorEntry {
  stamp: string;
  file: ParquetFile;
  rowBySample: Map<number, number>;
  /** Reads in progress: the file is closed only once it is evicted and no read holds it. */
  users: number;
  evicted: boolean;
  closed: boolean;
}

/** Closes an evicted mirror once its last reader is done (never under a reader). */
function settleMirror(m: MirrorEntry): void {
  if (!m.evicted || m.users > 0 || m.closed) return;
  m.closed = true;
  void m.file.close().catch(() => {});
}

function stem(id: number, evaluation: boolean): string {
  return `${evaluation ? 'eval_' : ''}${id}`;
}

function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function checkId(name: string, v: number): void {
  if (!Number.isSafeInteger(v)) throw new BadArgument(name, `${name} must be an integer, got ${String(v)}`);
}

export class DumpReader {
  private readonly onDecode: (file: string) => void;
  private readonly now: () => number;
  private readonly joinedSteps: Lru<string, JoinedStep>;
  private readonly trainSteps = new Lru<number, TrainStepFiles>(4);
  private readonly sampleReads = new Lru<string, SampleRead>(16);
  /** `train_data/`'s names, and those that are not plain files (symlinks among them: checked before use). */
  private listing: { stamp: string; names: string[]; unplain: Set<string> } | undefined;
  private readonly stats = new Map<string, { at: number; stat: Promise<Stats> }>();
  private readonly mirrors = new Lru<string, MirrorEntry>(4, (m) => {
    m.evicted = true;
    settleMirror(m);
  });
  private readonly rolloutFallbacks = new Lru<string, RolloutDump>(2);
  private readonly conversationFiles = new Lru<string, { stamp: string; rows: Map<number, ConversationRecord> }>(4);
  private tokenizer: Promise<RunTokenizer | null> | undefined;
  private texts: Promise<TokenTexts> | undefined;
  /** Step records, train catalogs and mirror layouts kept in the cache directory. */
  private readonly derived: DerivedCache;
  /** Mirror layouts being written to the cache directory, one after another. */
  private readonly mirrorWrites = new LaterWrites();
  private readonly pending = new Map<string, Promise<unknown>>();
  private readonly layoutWarnings = new Map<string, string>();
  private readonly failedSteps = new Lru<string, { stamp: string; error: unknown }>(64);

  private constructor(
    readonly runDir: string,
    /** The run directory with every symlink resolved: no file read may resolve outside it. */
    private readonly realDir: string,
    private readonly cacheDir: string | null,
    tensorLru: number,
    onDecode: (file: string) => void,
    now: () => number,
    private readonly offThreadAbove: number,
    private readonly textSliceOpcodes: number | undefined,
  ) {
    this.joinedSteps = new Lru(tensorLru);
    this.onDecode = onDecode;
    this.now = now;
    this.derived = new DerivedCache(cacheDir);
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
    if (!st.isDirectory()) throw new BadArgument('runDir', 'the dump path is not a directory');
    let cacheDir: string | null = null;
    const realDir = await realpath(dir);
    if (options.cacheDir !== undefined) {
      cacheDir = resolve(options.cacheDir);
      // Compared after resolving symlinks: a linked cache folder (or run) must not put a cache file inside the run.
      if (isInside(realDir, await realpathOfFuture(cacheDir))) {
        throw new BadArgument('cacheDir', 'the cache directory must lie outside the run directory (nothing is written inside a run)');
      }
    }
    const lru = options.tensorLru ?? 2;
    if (!Number.isInteger(lru) || lru < 0) throw new BadArgument('tensorLru', `tensorLru must be a non-negative integer, got ${lru}`);
    return new DumpReader(
      dir,
      realDir,
      cacheDir,
      lru,
      options.onDecode ?? (() => {}),
      options.now ?? Date.now,
      options.decodeOffThreadAbove ?? 16 * 2 ** 20,
      options.textSliceOpcodes,
    );
  }

  /** The absolute path of a run file, refused (FileRefused) when a symlink makes it resolve outside the run. */
  private async runPath(name: string): Promise<string> {
    const path = join(this.runDir, name);
    try {
      await confinedPath(this.realDir, path, name);
    } catch (e) {
      // A missing file is the caller's to report (404, or absent); only an escape is refused here.
      if (isMissing(e)) return path;
      throw e;
    }
    return path;
  }

  /** Problems with the run's layout met while listing it (names that are not steps, folders that are files). */
  warnings(): string[] {
    return [...this.layoutWarnings.values()];
  }

  private noteLayout(file: string, problem: string): void {
    this.layoutWarnings.set(file, `${file}: ${problem}`);
  }

  /** Visible train and eval rollout ids (see discovery's freshness rule). */
  rolloutIds(): Promise<RolloutIds> {
    return discoverRolloutIds(this.runDir, this.now(), (file, problem) => this.noteLayout(file, problem));
  }

  /** One step's samples in batch order with, for a train step, their train digests and the raw rewards. */
  async step(rolloutId: number, evaluation = false): Promise<StepRecords> {
    return (await this.joined(rolloutId, evaluation)).records;
  }

  /** One sample's tokens with its per-token values (rollout side from the parquet mirror). */
  async sampleTokens(rolloutId: number, sampleIndex: number, evaluation = false): Promise<SampleTokenRecord> {
    checkId('rollout_id', rolloutId);
    checkId('sample_index', sampleIndex);
    const texts = this.cacheDir ? await this.tokenTexts() : null;
    // Unless texts kept by an earlier process may spare it, the tokenizer loads while the sample is read
    // (the read waits on the files much of the time).
    let tokenizerP = texts && texts.size > 0 ? null : this.runTokenizer();
    const { rollout, trainRow } = await this.sampleRead(rolloutId, evaluation, sampleIndex);
    let decodeToken: ((id: number) => string) | null;
    if (texts && texts.covers(rollout.tokens)) {
      decodeToken = texts.text;
    } else {
      const tokenizer = await (tokenizerP ??= this.runTokenizer());
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
    const key = `${stem(rolloutId, evaluation)}:${sampleIndex}`;
    const step = evaluation ? null : await this.trainStep(rolloutId);
    // The rank files' catalog is read (or its identities checked on the thread pool) while the mirror opens.
    step?.prefetch();
    const mirrorStamp = (await this.mirror(stem(rolloutId, evaluation)))?.stamp ?? 'no mirror';
    const stamp = `${mirrorStamp}\n${step?.stamp ?? ''}`;
    const cached = this.sampleReads.get(key);
    if (cached && cached.stamp === stamp) return cached;
    const rollout = await this.rolloutTokens(rolloutId, evaluation, sampleIndex);
    let trainRow: TrainRow | null = null;
    if (step) {
      const index = await step.indexFor(sampleIndex, rollout.totalLength);
      const rows = this.rowReader(4, false);
      try {
        trainRow = await buildTrainRow(index, sampleIndex, rows.reader(index));
      } finally {
        await rows.close();
      }
    }
    const read = { stamp, rollout, trainRow };
    this.sampleReads.set(key, read);
    return read;
  }

  /** One step's recorded conversations (trajectory sidecar rows, as written) by sample id; null without a sidecar. */
  async conversations(rolloutId: number, evaluation = false): Promise<ReadonlyMap<number, ConversationRecord> | null> {
    checkId('rollout_id', rolloutId);
    const name = `trajectory/${stem(rolloutId, evaluation)}.jsonl`;
    const path = await this.runPath(name);
    let st;
    try {
      st = await stat(path);
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    const stamp = `${st.mtimeMs}:${st.size}`;
    let cached = this.conversationFiles.get(name);
    if (!cached || cached.stamp !== stamp) {
      const text = (await readRegularFile(path)).toString('utf8');
      const rows = new Map<number, ConversationRecord>();
      const lines = text.split('\n');
      lines.forEach((line, i) => {
        if (line.trim() === '') return;
        let row: unknown;
        try {
          row = JSON.parse(line);
        } catch {
          // An unterminated last line is a write in progress; anything else is corruption.
          if (i === lines.length - 1) return;
          throw new DumpInconsistent(name, `line ${i + 1} is not JSON`);
        }
        // Rows are found by sample id (a later line for the same sample wins); a row without one is unreachable.
        const id = (row as { sample_index?: unknown } | null)?.sample_index;
        if (typeof id === 'number') rows.set(id, row as ConversationRecord);
      });
      cached = { stamp, rows };
      this.conversationFiles.set(name, cached);
    }
    return cached.rows;
  }

  /** Every sample's searchable text (prompt, response, label, metadata, ids), in batch order. */
  async sampleTexts(rolloutId: number, evaluation = false): Promise<DumpedSampleText[]> {
    const out: DumpedSampleText[] = [];
    for await (const batch of this.sampleTextBatches(rolloutId, evaluation)) for (const t of batch) out.push(t);
    return out;
  }

  /**
   * The same texts in batch order, handed out in batches while the dump is still being decoded (a slice of
   * decoding at a time, the event loop served between slices): the first samples are searched long before
   * the last ones are read.
   */
  async *sampleTextBatches(rolloutId: number, evaluation = false): AsyncGenerator<DumpedSampleText[]> {
    checkId('rollout_id', rolloutId);
    const { name } = await this.rolloutStamp(rolloutId, evaluation);
    this.onDecode(name);
    const decode = await startTorchDecode(join(this.runDir, name), { typedLists: true }).catch(async (e: unknown) => {
      throw await this.loadFailure(name, e);
    });
    // The samples handed out so far: the finished list must begin with them.
    const streamed: PyValue[] = [];
    let sliceMs = TEXT_SLICE_MS.first;
    try {
      for (;;) {
        const batch: DumpedSampleText[] = [];
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
          throw await this.loadFailure(name, e);
        }
        if (batch.length > 0) yield batch;
        if (finished) return;
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      await decode.close();
    }
  }

  /** Drops every cache and closes open files. */
  async close(): Promise<void> {
    this.joinedSteps.clear();
    this.trainSteps.clear();
    this.sampleReads.clear();
    this.mirrors.clear();
    this.rolloutFallbacks.clear();
    this.conversationFiles.clear();
  }

  // ---- loading ------------------------------------------------------------------------------------

  /**
   * `stat` of a path, reused for STAT_REUSE_MS: warm answers re-validate their sources at most that often
   * instead of paying file-system round trips on every request.
   */
  private recentStat(path: string): Promise<Stats> {
    const now = Date.now();
    const known = this.stats.get(path);
    if (known && now - known.at < STAT_REUSE_MS) return known.stat;
    const p = stat(path);
    this.stats.set(path, { at: now, stat: p });
    p.catch(() => {});
    if (this.stats.size > 4096) this.stats.clear();
    return p;
  }

  /** Opens a `.pt` of the run; a fresh file that fails to decode is "still writing". */
  private async loadTorch(name: string): Promise<TorchDocument> {
    const path = join(this.runDir, name);
    this.onDecode(name);
    try {
      return await openTorchDocument(path);
    } catch (e) {
      throw await this.loadFailure(name, e);
    }
  }

  private async loadFailure(name: string, e: unknown): Promise<Error> {
    if (e instanceof DumpStillWriting || e instanceof NotFound) return e;
    if (isMissing(e)) return new NotFound(`${name} not found`);
    try {
      const st = await stat(join(this.runDir, name));
      if (this.now() - st.mtimeMs < FRESH_SECONDS * 1000) return new DumpStillWriting(name, e);
    } catch (se) {
      if (isMissing(se)) return new NotFound(`${name} not found`);
    }
    return e instanceof Error ? e : new Error(`${name}: ${String(e)}`);
  }

  /**
   * A reader of per-token row fields that reads tensor bytes straight from the rank archives, keeping at
   * most `capacity` of them (no storage stays cached once its row has been reduced). `wholeFiles` reads each
   * moderate-size archive in one go, for joins that need most of its storages.
   */
  private rowReader(capacity: number, wholeFiles: boolean) {
    const archives = new Lru<string, Promise<ZipArchive>>(capacity, (a) => void a.then((x) => x.close()).catch(() => {}));
    const self = this;
    return {
      reader(index: TrainIndex): RowFieldReader {
        return async (file: number, row: number, fieldName: TokenField) => {
          const f = index.files[file];
          const v = rowValue(f, fieldName, row);
          if (!(v instanceof Tensor) || f.source.root === null || !f.source.littleEndian) return readNumbers(v);
          try {
            const prefix = `${f.source.root ? `${f.source.root}/` : ''}data/`;
            let archive = archives.get(f.source.path);
            if (!archive) {
              // A join needs most of a rank file's storages: read a file of moderate size in one go. One
              // sample's read needs this row's per-token fields: their storages in a few blocking reads.
              archive = wholeFiles
                ? ZipArchive.open(f.source.path, { wholeFileBelow: WHOLE_RANK_FILE_BELOW })
                : (async () => {
                    const a = ZipArchive.openSync(f.source.path, { wholeFileBelow: 0 });
                    const wanted = [];
                    for (const name of ROW_TOKEN_FIELDS) {
                      const t = rowValue(f, name, row);
                      const e = t instanceof Tensor ? a.entry(`${prefix}${t.storage.key}`) : undefined;
                      // A compressed storage is left to the read that reports it.
                      if (e && e.method === 0 && e.compressedSize === e.size) wanted.push(e);
                    }
                    a.loadSync(wanted);
                    return a;
                  })();
              archives.set(f.source.path, archive);
            }
            const bytes = await (await archive).read(`${prefix}${v.storage.key}`);
            return tensorNumbersFromBytes(v, bytes);
          } catch (e) {
            throw await self.loadFailure(f.file, e);
          }
        };
      },
      async close(): Promise<void> {
        archives.clear();
      },
    };
  }

  /** `train_data/` file names, re-read only when the directory changes. */
  private async trainListing(): Promise<string[]> {
    const dir = join(this.runDir, 'train_data');
    let st;
    try {
      st = await this.recentStat(dir);
    } catch (e) {
      if (isMissing(e)) return [];
      throw e;
    }
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    if (this.listing && this.listing.stamp === stamp) return this.listing.names;
    if (!st.isDirectory()) {
      // The run still answers from its rollout dumps alone.
      this.noteLayout('train_data', `${fileKind(st)}, not a directory: train dumps skipped`);
      this.listing = { stamp, names: [], unplain: new Set() };
      return [];
    }
    const entries = await readdir(dir, { withFileTypes: true });
    const names = entries.map((e) => e.name);
    const unplain = new Set(entries.filter((e) => !e.isFile()).map((e) => e.name));
    this.listing = { stamp, names, unplain };
    return names;
  }

  private async trainFileNames(rolloutId: number): Promise<RankFileName[]> {
    const prefix = `${rolloutId}_`;
    const out: RankFileName[] = [];
    for (const n of await this.trainListing()) {
      if (!n.startsWith(prefix) || !n.endsWith('.pt')) continue;
      const r = n.slice(prefix.length, -3);
      if (!/^\d+$/.test(r)) continue;
      out.push({ name: `train_data/${n}`, rank: Number(r), listedRegular: this.listing?.unplain.has(n) === false });
    }
    return out.sort((a, b) => a.rank - b.rank);
  }

  /** One step's rank files (cached per step while its listing is unchanged), or null without train dumps. */
  private async trainStep(rolloutId: number): Promise<TrainStepFiles | null> {
    const files = await this.trainFileNames(rolloutId);
    if (files.length === 0) return null;
    const stamp = files.map((f) => f.name).join('\n');
    const cached = this.trainSteps.get(rolloutId);
    if (cached && cached.stamp === stamp) return cached;
    // A plain file resolves inside the run when its folder does: only the folder and what is not a plain
    // file (a symlink) need resolving.
    await this.runPath('train_data');
    const unplain = this.listing?.unplain;
    for (const f of files) if (!unplain || unplain.has(basename(f.name))) await this.runPath(f.name);
    const step = new TrainStepFiles(
      this.runDir,
      files,
      stamp,
      (name) => this.loadTorch(name),
      (name, e) => this.loadFailure(name, e),
      this.onDecode,
      this.catalogStore(rolloutId, files),
    );
    this.trainSteps.set(rolloutId, step);
    return step;
  }

  /**
   * Where a train step's catalog persists (with a cache directory): `train_{id}.catalog.json`, naming each
   * rank file by inode, size, modification and creation time, read back only while every file still has
   * them (a rewritten, replaced, added or removed rank file means another scan).
   */
  private catalogStore(rolloutId: number, files: readonly RankFileName[]): StepCatalogStore | null {
    if (!this.cacheDir) return null;
    const path = join(this.cacheDir, `train_${rolloutId}.catalog.json`);
    return {
      load: async () => {
        let text: string;
        try {
          // Small cache files are read with one blocking read (no round trips on a token read's path).
          text = readFileSync(path, 'utf8');
        } catch {
          return null;
        }
        const kept = parseStepCatalog(text, files);
        if (!kept) return null;
        // Every rank file must still be the one described (the stats run on the thread pool meanwhile).
        const now = await Promise.all(files.map((f) => stat(join(this.runDir, f.name)).then(fileIdentity, () => null)));
        return now.every((id, k) => id === kept.sources[k]) ? kept : null;
      },
      save: async (catalog) => {
        const body = JSON.stringify({
          version: TRAIN_CATALOG_VERSION,
          files: files.map((f, k) => [f.name, catalog.sources[k]]),
          twinOf: catalog.twinOf,
          // Twins list the same sizes: only the lowest rank of each set writes them.
          sizes: catalog.sizes.map((s, i) => (catalog.twinOf[i] === i ? s : null)),
          samples: [...catalog.samples],
        });
        await this.derived.write(basename(path), () => body);
      },
    };
  }

  /** Settles once the train step catalogs, token texts and mirror layouts asked to be saved so far are written (tests). */
  async cacheWritten(): Promise<void> {
    for (const step of this.trainSteps.values()) await step.saved();
    await (await this.texts)?.saved();
    await this.mirrorWrites.settled();
  }

  /** Deduplicates concurrent computations of the same thing. */
  private once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const running = this.pending.get(key) as Promise<T> | undefined;
    if (running) return running;
    const p = fn().finally(() => this.pending.delete(key));
    this.pending.set(key, p);
    return p;
  }

  private async rolloutStamp(rolloutId: number, evaluation: boolean): Promise<{ name: string; stamp: string; mtimeMs: number }> {
    const name = `rollout_data/${stem(rolloutId, evaluation)}.pt`;
    try {
      const st = await this.recentStat(await this.runPath(name));
      return { name, stamp: `${st.mtimeMs}:${st.size}`, mtimeMs: st.mtimeMs };
    } catch (e) {
      if (isMissing(e)) throw new NotFound(`${name} not found: no ${evaluation ? 'eval ' : ''}rollout ${rolloutId} in this run`);
      throw e;
    }
  }

  private async openRolloutDocument(name: string, withTokens: boolean): Promise<TorchDocument> {
    // Number lists decode as typed arrays: far less memory and collector work; without tokens, the
    // per-token lists as their lengths alone.
    this.onDecode(name);
    return openTorchFile(join(this.runDir, name), { typedLists: true, lengthOnlyUnder: withTokens ? undefined : PER_TOKEN_LISTS }).catch(async (e) => {
      throw await this.loadFailure(name, e);
    });
  }

  private async loadRollout(rolloutId: number, evaluation: boolean, withTokens = false): Promise<RolloutDump> {
    const name = `rollout_data/${stem(rolloutId, evaluation)}.pt`;
    const doc = await this.openRolloutDocument(name, withTokens);
    try {
      return decodeRolloutDump(doc.value, { rolloutId, evaluation, file: name, withTokens });
    } catch (e) {
      if (e instanceof DumpInconsistent) throw e;
      throw await this.loadFailure(name, e);
    } finally {
      await doc.close();
    }
  }

  /**
   * For a rollout dump big enough, a worker thread that decodes it while this
   * thread joins the train side, then helps with that join; null otherwise. `dump` is null when the worker
   * could not run (the caller then decodes here). `close()` ends the worker.
   */
  private async decodeWorker(
    name: string,
    rolloutId: number,
    evaluation: boolean,
  ): Promise<{ dump: Promise<RolloutDump | null>; helper: JoinHelper<TrainDigest>; close(): void } | null> {
    const size = await stat(join(this.runDir, name)).then((st) => st.size, () => 0);
    if (size <= this.offThreadAbove) return null;
    const worker = startModuleWorker('run/miles/rolloutDecodeWorker', {
      workerData: { path: join(this.runDir, name), file: name, rolloutId, evaluation },
    });
    type Done = { groups: JoinedGroup<TrainDigest>[]; error?: { i: number; error: WorkerError } };
    let settleDump!: (m: { dump?: RolloutDump; error?: WorkerError } | null) => void;
    let settleTrain!: (m: Done) => void;
    const dumpMessage = new Promise<{ dump?: RolloutDump; error?: WorkerError } | null>((r) => (settleDump = r));
    const trainDone = new Promise<Done>((r) => (settleTrain = r));
    worker.on('message', (m: { dump?: RolloutDump; error?: WorkerError; trainDone?: Done }) => {
      if (m.trainDone) settleTrain(m.trainDone);
      else settleDump(m);
    });
    // A worker that stops early has delivered nothing more: the main thread does the rest.
    const stopped = (): void => {
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
      throw await this.loadFailure(name, Object.assign(new Error(text), { name: kind, code }));
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
        return { groups: done.groups, error: { i, error: e } };
      },
      cancel: () => worker.postMessage({ train: null }),
    };
    return { dump, helper, close: () => void worker.terminate() };
  }

  /** The joined step (rollout samples + train digests), from the resident LRU, the disk cache or the dumps. */
  private async joined(rolloutId: number, evaluation: boolean): Promise<JoinedStep> {
    checkId('rollout_id', rolloutId);
    const key = stem(rolloutId, evaluation);
    const rollout = await this.rolloutStamp(rolloutId, evaluation);
    const trainFiles = evaluation ? [] : await this.trainFileNames(rolloutId);
    const stamp = [rollout.stamp, ...trainFiles.map((f) => f.name)].join('\n');
    const cached = this.joinedSteps.get(key);
    if (cached && cached.stamp === stamp) return cached;
    // A damaged step answers its failure again without another decode until one of its files changes: a
    // hostile dump asked for repeatedly costs its decode once.
    const failed = this.failedSteps.get(key);
    if (failed && failed.stamp === stamp) throw failed.error;
    return this.once(`joined:${key}:${stamp}`, async () => {
      try {
        const fromDisk = await this.readStepCache(key, rollout.name, trainFiles);
        const step = fromDisk ? { records: fromDisk, stamp } : await this.computeJoined(rolloutId, evaluation, stamp, rollout.name, trainFiles);
        this.joinedSteps.set(key, step);
        return step;
      } catch (e) {
        if (damageOf(e) !== null) this.failedSteps.set(key, { stamp, error: e });
        throw e;
      }
    });
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
    const worker = await this.decodeWorker(rolloutName, rolloutId, evaluation);
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
    worker: { dump: Promise<RolloutDump | null>; helper: JoinHelper<TrainDigest> } | null,
  ): Promise<JoinedStep> {
    const dumpP = worker
      ? worker.dump.then((d) => d ?? this.loadRollout(rolloutId, evaluation))
      : this.loadRollout(rolloutId, evaluation);
    dumpP.catch(() => {});
    const digests = new Map<number, TrainDigest>();
    let train: TrainStepFiles | null = null;
    try {
      train = evaluation ? null : await this.trainStep(rolloutId);
    } finally {
      if (!train) worker?.helper.cancel();
    }
    let raw: (number | null)[] | null = null;
    if (train) {
      const { index, joined } = await train.joinAll(digestTrainRow, worker?.helper);
      for (const [s, d] of joined) digests.set(s, d);
      const dump = await dumpP;
      checkTrainSamples(index, new Set(dump.samples.flatMap((s) => (s.index === null ? [] : [s.index]))));
      raw = batchRawRewards(index, dump.samples.length);
    }
    const dump = await dumpP;
    const records: StepRecords = { rolloutId, evaluation, samples: dump.samples, digests, rawRewards: raw };
    await this.writeStepCache(stem(rolloutId, evaluation), rolloutName, trainFiles, records);
    return { stamp, records };
  }

  // ---- on-disk step cache (only with cacheDir) ----------------------------------------------------

  private async sourceStamps(rolloutName: string, trainFiles: { name: string }[]): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const name of [rolloutName, ...trainFiles.map((f) => f.name)]) {
      out[name] = (await stat(join(this.runDir, name))).mtimeMs;
    }
    return out;
  }

  private async readStepCache(key: string, rolloutName: string, trainFiles: { name: string }[]): Promise<StepRecords | null> {
    if (!this.cacheDir) return null;
    let cached: { version: number; sources: Record<string, number>; step: CachedStep };
    try {
      cached = JSON.parse(await readFile(join(this.cacheDir, `rollout_${key}.step.json`), 'utf8'));
    } catch {
      return null;
    }
    if (cached.version !== STEP_CACHE_VERSION) return null;
    const sources = await this.sourceStamps(rolloutName, trainFiles);
    if (JSON.stringify(sources) !== JSON.stringify(cached.sources)) return null;
    const { digests, ...rest } = cached.step;
    return { ...rest, digests: new Map(digests) };
  }

  private async writeStepCache(key: string, rolloutName: string, trainFiles: { name: string }[], step: StepRecords): Promise<void> {
    if (!this.cacheDir) return;
    let body: string;
    try {
      const cached: CachedStep = { ...step, digests: [...step.digests] };
      body = JSON.stringify({ version: STEP_CACHE_VERSION, sources: await this.sourceStamps(rolloutName, trainFiles), step: cached });
    } catch {
      return; // a file that cannot be stamped now is stamped by the next read
    }
    await this.derived.write(`rollout_${key}.step.json`, () => body);
  }

  // ---- token reads --------------------------------------------------------------------------------

  /** Single-token texts kept in the cache directory for the tokenizer as it was when first asked (read once). */
  private tokenTexts(): Promise<TokenTexts> {
    this.texts ??= TokenTexts.open(this.cacheDir, this.runDir);
    return this.texts;
  }

  private runTokenizer(): Promise<RunTokenizer | null> {
    // A damaged tokenizer costs only the token texts (ids still answer); it is listed in the warnings.
    // Loaded with the first token read (the tokenizer library is not needed before one).
    this.tokenizer ??= import('../tokenizer.ts').then(({ RunTokenizer }) => RunTokenizer.load(this.runDir)).catch((e: unknown) => {
      const message = (e as Error).message ?? String(e);
      this.noteLayout('tokenizer/tokenizer.json', `${message.replace(/^\S*tokenizer\.json: /, '').replace(/: skipped$/, '')}: token texts skipped`);
      return null;
    });
    return this.tokenizer;
  }

  /** The rollout side of one sample: from the parquet mirror, else (mirror missing or foreign) the `.pt`. */
  private async rolloutTokens(
    rolloutId: number,
    evaluation: boolean,
    sampleIndex: number,
  ): Promise<{ totalLength: number; responseLength: number; tokens: ArrayLike<number>; rolloutLogProbs: ArrayLike<number> | null }> {
    const key = stem(rolloutId, evaluation);
    const unknown = () => new NotFound(`unknown sample_index ${sampleIndex} in rollout ${rolloutId}`);
    const mirror = await this.leaseMirror(key);
    if (mirror) {
      try {
        let rowNo = mirror.rowBySample.get(sampleIndex);
        if (rowNo === undefined) {
          const rows = await mirror.file.findRows('sample_index', sampleIndex);
          if (rows.length === 0) throw unknown();
          rowNo = rows[0];
          mirror.rowBySample.set(sampleIndex, rowNo);
        }
        const [row] = await mirror.file.readRows(rowNo, rowNo + 1, MIRROR_ROW_COLUMNS);
        return mirrorRow(row);
      } finally {
        mirror.users--;
        settleMirror(mirror);
      }
    }
    // No usable mirror: decode the rollout dump once (kept for the next read of the same step).
    let dump = this.rolloutFallbacks.get(key);
    if (!dump) {
      await this.rolloutStamp(rolloutId, evaluation);
      dump = await this.loadRollout(rolloutId, evaluation, true);
      this.rolloutFallbacks.set(key, dump);
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

  /** The open mirror of a step, held for the caller (who must decrement `users` and settle it when done). */
  private async leaseMirror(key: string): Promise<MirrorEntry | null> {
    for (;;) {
      const m = await this.mirror(key);
      if (!m) return null;
      // Evicted and closed between its opening and now: the next call opens it again.
      if (m.closed) continue;
      m.users++;
      return m;
    }
  }

  private async mirror(key: string): Promise<MirrorEntry | null> {
    const name = `dashboard_columns/rollout_${key}.parquet`;
    const path = await this.runPath(name);
    let st;
    try {
      st = await this.recentStat(path);
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    const cached = this.mirrors.get(key);
    if (cached && cached.stamp === stamp) return cached;
    // Concurrent first reads share one open (else each would replace, and close, the others' file).
    return this.once(`mirror:${key}:${stamp}`, () => this.openMirror(key, name, path, stamp, st));
  }

  private async openMirror(key: string, name: string, path: string, stamp: string, st: Stats): Promise<MirrorEntry | null> {
    let file: ParquetFile;
    // Where its row groups lie, as an earlier process found them in this same file.
    const layoutPath = this.cacheDir ? join(this.cacheDir, `rollout_${key}.mirror.json`) : null;
    const source = fileIdentity(st);
    let keptLayout: string | undefined;
    if (layoutPath) {
      try {
        const kept = JSON.parse(readFileSync(layoutPath, 'utf8')) as { version?: unknown; source?: unknown; layout?: unknown };
        if (kept.version === MIRROR_LAYOUT_VERSION && kept.source === source && typeof kept.layout === 'string') keptLayout = kept.layout;
      } catch {
        // None yet, or damaged: the footer is walked.
      }
    }
    try {
      // The Parquet reader loads with the first mirror read, not at start.
      file = await (await import('../../formats/parquet.ts')).ParquetFile.open(path, name, { keptLayout });
    } catch (e) {
      if (isMissing(e)) return null;
      if (this.now() - st.mtimeMs < FRESH_SECONDS * 1000) throw new DumpStillWriting(name, e);
      throw e;
    }
    const names = [...file.columnNames].sort().join(',');
    if (names !== [...ROLLOUT_COLUMNS].sort().join(',')) {
      await file.close();
      return null;
    }
    if (layoutPath && keptLayout === undefined) {
      // Written after the answer that opened it (the stat above was taken before the file was read).
      const opened = file;
      // each mirror's own layout: not coalesced with another's
      this.mirrorWrites.request(() => this.derived.write(basename(layoutPath), () => JSON.stringify({ version: MIRROR_LAYOUT_VERSION, source, layout: opened.keptLayout() })), false);
    }
    const entry: MirrorEntry = { stamp, file, rowBySample: new Map(), users: 0, evicted: false, closed: false };
    this.mirrors.set(key, entry);
    return entry;
  }
}

function mirrorRow(row: ParquetRow): {
  totalLength: number;
  responseLength: number;
  tokens: ArrayLike<number>;
  rolloutLogProbs: ArrayLike<number> | null;
} {
  const tokens = (row.tokens ?? []) as ArrayLike<number | bigint>;
  const lp = row.rollout_log_probs as ArrayLike<number | null> | null | undefined;
  return {
    totalLength: Number(row.total_length),
    responseLength: Number(row.response_length),
    tokens: Array.from(tokens, (t) => Number(t)),
    rolloutLogProbs: lp ? Array.from(lp, (v) => (v === null ? NaN : v)) : null,
  };
}

/** Writes a cache file whole (a temp file renamed over it); a cache that cannot be written is no failure. */
/**
 * A persisted train step catalog, or null when it is not one for exactly these files (another version, other
 * files, or damage); the caller checks the files still have the identities it names.
 */
function parseStepCatalog(text: string, files: readonly RankFileName[]): StepCatalog | null {
  let kept: { version?: unknown; files?: unknown; twinOf?: unknown; sizes?: unknown; samples?: unknown };
  try {
    kept = JSON.parse(text);
  } catch {
    return null;
  }
  const n = files.length;
  if (kept?.version !== TRAIN_CATALOG_VERSION || !Array.isArray(kept.files) || kept.files.length !== n) return null;
  const sources: string[] = [];
  for (let k = 0; k < n; k++) {
    const f = kept.files[k];
    if (!Array.isArray(f) || f[0] !== files[k].name || typeof f[1] !== 'string') return null;
    sources.push(f[1]);
  }
  const { twinOf, sizes, samples } = kept;
  if (!Array.isArray(twinOf) || twinOf.length !== n || !Array.isArray(sizes) || sizes.length !== n || !Array.isArray(samples)) return null;
  const isInts = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => Number.isSafeInteger(x));
  const byFile: number[][] = [];
  for (let i = 0; i < n; i++) {
    const t = twinOf[i];
    // A twin points at the lowest rank of its set, which points at itself.
    if (!Number.isSafeInteger(t) || t < 0 || t > i || twinOf[t] !== t) return null;
    const own = sizes[t];
    if (!isInts(own)) return null;
    byFile.push(own);
  }
  const known = new Map<number, number[]>();
  for (const e of samples) {
    if (!Array.isArray(e) || e.length !== 2 || !Number.isSafeInteger(e[0]) || e[0] < 0 || e[0] >= n || twinOf[e[0]] !== e[0] || !isInts(e[1])) return null;
    known.set(e[0], e[1]);
  }
  return { sources, twinOf: twinOf as number[], sizes: byFile, samples: known };
}

/** `realpath` of a path that may not exist yet: its nearest existing ancestor resolved, the rest appended. */
async function realpathOfFuture(path: string): Promise<string> {
  const rest: string[] = [];
  let p = path;
  for (;;) {
    try {
      return join(await realpath(p), ...rest.reverse());
    } catch (e) {
      const parent = dirname(p);
      if (!isMissing(e) || parent === p) throw e;
      rest.push(basename(p));
      p = parent;
    }
  }
}
