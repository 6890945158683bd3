// The texts of single tokens as the run's tokenizer decodes them, kept in the cache directory for the next
// process (`tokenizer.texts.json`, naming tokenizer.json and tokenizer_config.json by inode, size, modification
// and creation time): a token read whose ids are all known there answers without loading the tokenizer.
import { lstatSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DerivedCache, LaterWrites } from '../derivedCache.ts';
import { fileIdentity } from '../../formats/fileAccess.ts';

const VERSION = 1;
const FILE = 'tokenizer.texts.json';


/**
 * The tokenizer files as they are now, or null when tokenizer.json is not a regular file (missing, a
 * symlink, damaged in kind): then nothing kept is used and the tokenizer itself decides.
 */
function tokenizerSource(runDir: string): string | null {
  try {
    const json = lstatSync(join(runDir, 'tokenizer', 'tokenizer.json'));
    if (!json.isFile()) return null;
    let config = 'none';
    try {
      const st = lstatSync(join(runDir, 'tokenizer', 'tokenizer_config.json'));
      config = st.isFile() ? fileIdentity(st) : 'other';
    } catch {
      // No config: the tokenizer loads without one.
    }
    return `${fileIdentity(json)}/${config}`;
  } catch {
    return null;
  }
}

export class TokenTexts {
  private readonly writes = new LaterWrites();

  private constructor(
    private readonly file: string | null,
    /** The tokenizer files' identity when this was opened (null: none usable, nothing is kept). */
    private readonly source: string | null,
    private readonly texts: Map<number, string>,
  ) {}

  /** The texts kept in `cacheDir` for the run's tokenizer as it is now (none without a cache directory). */
  static async open(cacheDir: string | null, runDir: string): Promise<TokenTexts> {
    const source = cacheDir ? tokenizerSource(runDir) : null;
    if (!cacheDir || !source) return new TokenTexts(null, null, new Map());
    const file = join(cacheDir, FILE);
    const texts = new Map<number, string>();
    try {
      const kept = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown; source?: unknown; texts?: unknown };
      if (kept.version === VERSION && kept.source === source && Array.isArray(kept.texts)) {
        for (const e of kept.texts) {
          if (!Array.isArray(e) || !Number.isSafeInteger(e[0]) || typeof e[1] !== 'string') {
            texts.clear();
            break;
          }
          texts.set(e[0], e[1]);
        }
      }
    } catch {
      // Missing or damaged: nothing is known yet.
    }
    return new TokenTexts(file, source, texts);
  }

  get size(): number {
    return this.texts.size;
  }

  /** Whether every one of `ids` has a kept text. */
  covers(ids: ArrayLike<number>): boolean {
    if (this.source === null) return false;
    for (let i = 0; i < ids.length; i++) if (!this.texts.has(Number(ids[i]))) return false;
    return true;
  }

  /** The kept text of a token `covers` vouched for. */
  readonly text = (id: number): string => this.texts.get(id)!;

  /** `decode` (the tokenizer's), remembering each new text and keeping it for the next process. */
  through(decode: (id: number) => string): (id: number) => string {
    return (id) => {
      let t = this.texts.get(id);
      if (t === undefined) {
        t = decode(id);
        this.texts.set(id, t);
        this.persist();
      }
      return t;
    };
  }

  /** Settles once every save asked for so far is written (or has failed). */
  saved(): Promise<void> {
    return this.writes.settled();
  }

  /** Saves the texts soon (after the answer being built), once for any number of new texts meanwhile. */
  private persist(): void {
    const file = this.file;
    if (file === null) return;
    this.writes.request(() => new DerivedCache(dirname(file)).write(FILE, () => JSON.stringify({ version: VERSION, source: this.source, texts: [...this.texts] })));
  }

}
