// The parquet token mirror (`dashboard_columns/rollout_{id}.parquet`): one sample's rollout tokens and log
// probs without decoding the rollout dump; open files kept in an LRU, their row-group layout kept in the cache.
import { readFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { fileIdentity } from '../../formats/fileAccess.ts';
import type { ParquetFile, ParquetRow } from '../../formats/parquet.ts';
import { DumpStillWriting, NotFound, stillBeingWritten } from '../errors.ts';
import { LaterWrites } from '../derivedCache.ts';
import { Lru } from './lru.ts';
import { isMissing, type DumpFiles } from './dumpFiles.ts';
import { mirrorFile, stepStem } from '../../formats/miles/layout.ts';

/** Columns of `dashboard_columns/rollout_*.parquet`; a mirror with another column set is not trusted. */
export const ROLLOUT_COLUMNS = ['sample_index', 'response_length', 'total_length', 'tokens', 'loss_mask', 'rollout_log_probs'];
/** The mirror columns a token read decodes (the loss mask comes from the train side). */
const MIRROR_ROW_COLUMNS = ['response_length', 'total_length', 'tokens', 'rollout_log_probs'];
const MIRROR_LAYOUT_VERSION = 1;

/** The rollout side of one sample's token read. */
export interface SampleTokens {
  totalLength: number;
  responseLength: number;
  tokens: ArrayLike<number>;
  rolloutLogProbs: ArrayLike<number> | null;
}

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

/** A damaged mirror is a copy: the rollout dump holds the same tokens. */
const MIRROR_READ_AROUND = 'the tokens are read from the rollout dump instead';

export class TokenMirror {
  private readonly mirrors = new Lru<string, MirrorEntry>(4, (m) => {
    m.evicted = true;
    settleMirror(m);
  });
  /** Mirror layouts being written to the cache directory, one after another. */
  private readonly layoutWrites = new LaterWrites();
  private parquetModule: Promise<typeof import('../../formats/parquet.ts')> | undefined;

  constructor(private readonly files: DumpFiles) {}

  /**
   * The Parquet reader's module, loaded with the first mirror read (not at start); `parquetReader()` as a token
   * read begins lets it compile while the read waits on the train listing's file system calls.
   */
  parquetReader(): Promise<typeof import('../../formats/parquet.ts')> {
    this.parquetModule ??= import('../../formats/parquet.ts');
    return this.parquetModule;
  }

  /** A stamp of the step's mirror as it is now, or null without a usable mirror. */
  async stamp(rolloutId: number, evaluation: boolean): Promise<string | null> {
    return (await this.mirror(rolloutId, evaluation))?.stamp ?? null;
  }

  /**
   * One sample's row of the step's mirror (`unknown` when the mirror lacks the sample), or null without a
   * usable mirror (missing, or with another column set).
   */
  async sampleTokens(rolloutId: number, evaluation: boolean, sampleIndex: number, unknown: () => Error): Promise<SampleTokens | null> {
    const mirror = await this.lease(rolloutId, evaluation);
    if (!mirror) return null;
    try {
      let rowNo = mirror.rowBySample.get(sampleIndex);
      if (rowNo === undefined) {
        const rows = await mirror.file.findRows('sample_index', sampleIndex);
        if (rows.length === 0) throw unknown();
        rowNo = rows[0];
        mirror.rowBySample.set(sampleIndex, rowNo);
      }
      const row = await mirror.file.readRow(rowNo, MIRROR_ROW_COLUMNS);
      return mirrorRow(row);
    } catch (e) {
      if (e instanceof NotFound) throw e;
      this.files.readAround(e, MIRROR_READ_AROUND);
      return null;
    } finally {
      mirror.users--;
      settleMirror(mirror);
    }
  }

  /** The open mirror of a step, held for the caller (who must decrement `users` and settle it when done). */
  private async lease(rolloutId: number, evaluation: boolean): Promise<MirrorEntry | null> {
    for (;;) {
      const m = await this.mirror(rolloutId, evaluation);
      if (!m) return null;
      // Evicted and closed between its opening and now: the next call opens it again.
      if (m.closed) continue;
      m.users++;
      return m;
    }
  }

  private async mirror(rolloutId: number, evaluation: boolean): Promise<MirrorEntry | null> {
    const key = stepStem(rolloutId, evaluation);
    const name = mirrorFile(rolloutId, evaluation);
    const path = await this.files.runPath(name);
    let st;
    try {
      st = await this.files.recentStat(path);
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    const cached = this.mirrors.get(key);
    if (cached && cached.stamp === stamp) return cached;
    // Concurrent first reads share one open (else each would replace, and close, the others' file).
    return this.files.once(`mirror:${key}:${stamp}`, () => this.open(key, name, path, stamp, st));
  }

  private async open(key: string, name: string, path: string, stamp: string, st: Stats): Promise<MirrorEntry | null> {
    let file: ParquetFile;
    // Where its row groups lie, as an earlier process found them in this same file.
    const layoutName = `rollout_${key}.mirror.json`;
    const layoutPath = this.files.cacheDir ? join(this.files.cacheDir, layoutName) : null;
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
      file = await (await this.parquetReader()).ParquetFile.open(path, name, { keptLayout });
    } catch (e) {
      if (isMissing(e)) return null;
      // a new file may still be being written; a directory, FIFO or link out of the run will never be a mirror
      if (stillBeingWritten(e, st.mtimeMs, this.files.now())) throw new DumpStillWriting(name, e);
      this.files.readAround(e, MIRROR_READ_AROUND);
      return null;
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
      this.layoutWrites.request(() => this.files.derived.write(layoutName, () => JSON.stringify({ version: MIRROR_LAYOUT_VERSION, source, layout: opened.keptLayout() })), false);
    }
    const entry: MirrorEntry = { stamp, file, rowBySample: new Map(), users: 0, evicted: false, closed: false };
    this.mirrors.set(key, entry);
    return entry;
  }

  /** Settles once the layouts asked to be saved so far are written (tests). */
  settled(): Promise<void> {
    return this.layoutWrites.settled();
  }

  clear(): void {
    this.mirrors.clear();
  }
}

function mirrorRow(row: ParquetRow): SampleTokens {
  const tokens = (row.tokens ?? []) as ArrayLike<number | bigint | null>;
  const lp = row.rollout_log_probs as ArrayLike<number | null> | null | undefined;
  // plain loops: a callback per token costs more than the row's decode on a cold read
  const ids = new Array<number>(tokens.length);
  for (let i = 0; i < ids.length; i++) ids[i] = Number(tokens[i]);
  let logProbs: number[] | null = null;
  if (lp) {
    logProbs = new Array<number>(lp.length);
    for (let i = 0; i < logProbs.length; i++) {
      const v = lp[i];
      logProbs[i] = v === null ? NaN : v;
    }
  }
  return { totalLength: Number(row.total_length), responseLength: Number(row.response_length), tokens: ids, rolloutLogProbs: logProbs };
}
