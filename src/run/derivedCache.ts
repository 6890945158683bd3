// Derived data kept in `--cache-dir` (never inside a run): named text entries written whole (temp file, rename).
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempPathBeside } from '../formats/fileAccess.ts';
import { foreground } from './foreground.ts';

export class DerivedCache {
  constructor(readonly dir: string | null) {}

  /** An entry's text, or null when there is none (or no cache). */
  async read(name: string): Promise<string | null> {
    if (!this.dir) return null;
    return readFile(join(this.dir, name), 'utf8').catch(() => null);
  }

  /** Stores an entry; `text` is only called with a cache. A failure to write is ignored: the cache is an optimisation. */
  async write(name: string, text: () => string): Promise<void> {
    if (!this.dir) return;
    const path = join(this.dir, name);
    const tmp = tempPathBeside(path);
    try {
      await mkdir(this.dir, { recursive: true });
      await writeFile(tmp, text());
      await rename(tmp, path);
    } catch {
      // A read-only or full cache directory must not fail the answer that wanted to write it.
      await rm(tmp, { force: true }).catch(() => {});
    }
  }
}

/**
 * How long no request must have been in flight before a cache write runs: a client asking one request after
 * another (a view's first screen, a script) does not find its next answer behind a megabyte of JSON.
 */
export const WRITE_QUIET_MS = 100;

/**
 * Cache writes made after the answers being given (once no request has been in flight for WRITE_QUIET_MS, see
 * `Foreground.idle`), one after another.
 * A write asked for with `coalesce` while an earlier coalescing one is still waiting is that one: the
 * writer reads the state it saves when it runs, so one write covers any number of changes meanwhile.
 */
export class LaterWrites {
  private chain: Promise<void> = Promise.resolve();
  private waiting = false;

  request(write: () => Promise<void> | void, coalesce = true): void {
    if (coalesce && this.waiting) return;
    if (coalesce) this.waiting = true;
    this.chain = this.chain
      .then(() => foreground.idle(WRITE_QUIET_MS))
      .then(() => {
        if (coalesce) this.waiting = false;
        return write();
      })
      .catch(() => {
        // The cache is an optimisation: a failed write must not fail anything.
      });
  }

  /** Settles once every write asked for so far is done (or has failed). */
  settled(): Promise<void> {
    return this.chain;
  }
}
