// What every reader of one dump directory shares: its paths (confined to the run), recent stats, the
// failure mapping for files still being written, layout warnings, the derived-data cache and coalesced loads.
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { confinedPath } from '../../formats/fileAccess.ts';
import { RefusedOption, DumpStillWriting, damageOf, isRefusedFile, NotFound, stillBeingWritten } from '../errors.ts';
import { DerivedCache } from '../derivedCache.ts';
import { openTorchDocument, type TorchDocument } from './torchDocument.ts';

/** How long a file's stat answer is trusted before a warm read re-checks it. */
const STAT_REUSE_MS = 1000;

export function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

export function checkId(name: string, v: number): void {
  if (!Number.isSafeInteger(v)) throw new RefusedOption(name, `${name} must be an integer, got ${String(v)}`);
}

export class DumpFiles {
  private readonly stats = new Map<string, { at: number; stat: Promise<Stats> }>();
  private readonly pending = new Map<string, Promise<unknown>>();
  private readonly layoutWarnings = new Map<string, string>();
  /** Step records, train catalogs and mirror layouts kept in the cache directory. */
  readonly derived: DerivedCache;

  constructor(
    readonly runDir: string,
    /** The run directory with every symlink resolved: no file read may resolve outside it. */
    private readonly realDir: string,
    readonly cacheDir: string | null,
    readonly onDecode: (file: string) => void,
    readonly now: () => number,
  ) {
    this.derived = new DerivedCache(cacheDir);
  }

  /** The absolute path of a run file, refused (FileRefused) when a symlink makes it resolve outside the run. */
  async runPath(name: string): Promise<string> {
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

  noteLayout(file: string, problem: string): void {
    this.layoutWarnings.set(file, `${file}: ${problem}`);
  }

  /**
   * A failure a reader goes on past when it is damage: said once among the warnings (`file: problem
   * (consequence)`); anything else is thrown again.
   */
  readAround(err: unknown, consequence: string): void {
    const damage = damageOf(err);
    if (damage === null) throw err;
    const line = `${damage} (${consequence})`;
    this.layoutWarnings.set(line, line);
  }

  /**
   * `stat` of a path, reused for STAT_REUSE_MS: warm answers re-validate their sources at most that often
   * instead of paying file-system round trips on every request.
   */
  recentStat(path: string): Promise<Stats> {
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
  async loadTorch(name: string): Promise<TorchDocument> {
    const path = join(this.runDir, name);
    this.onDecode(name);
    try {
      return await openTorchDocument(path);
    } catch (e) {
      throw await this.loadFailure(name, e);
    }
  }

  async loadFailure(name: string, e: unknown): Promise<Error> {
    if (e instanceof DumpStillWriting || e instanceof NotFound) return e;
    if (isMissing(e)) return new NotFound(`${name} not found`);
    // a directory, a FIFO, a link out of the run, no permission: no amount of waiting makes it a dump
    if (isRefusedFile(e)) return e as Error;
    try {
      const st = await stat(join(this.runDir, name));
      if (stillBeingWritten(e, st.mtimeMs, this.now())) return new DumpStillWriting(name, e);
    } catch (se) {
      if (isMissing(se)) return new NotFound(`${name} not found`);
    }
    return e instanceof Error ? e : new Error(`${name}: ${String(e)}`);
  }

  /** Deduplicates concurrent computations of the same thing. */
  once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const running = this.pending.get(key) as Promise<T> | undefined;
    if (running) return running;
    const p = fn().finally(() => this.pending.delete(key));
    this.pending.set(key, p);
    return p;
  }
}
