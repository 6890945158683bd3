// The run's own tokenizer (`tokenizer/`, a Hugging Face save_pretrained folder), for per-token text.
import { realpath } from 'node:fs/promises';
import { confinedPath, readRegularFile } from '../formats/fileAccess.ts';
import { join } from 'node:path';
import { TOKENIZER_DIR, TOKENIZER_FILE } from '../formats/miles/layout.ts';
import { Tokenizer } from '@huggingface/tokenizers';

export class RunTokenizer {
  private readonly memo = new Map<number, string>();

  private constructor(private readonly tokenizer: Tokenizer) {}

  /** Loads `{runDir}/tokenizer/tokenizer.json` (+ `tokenizer_config.json`); null when the run has none. */
  static async load(runDir: string): Promise<RunTokenizer | null> {
    const dir = join(runDir, TOKENIZER_DIR);
    let json: unknown;
    try {
      // Read only inside the run once symlinks resolve (a link out of the run is refused, not followed).
      const path = await confinedPath(await realpath(runDir), join(runDir, TOKENIZER_FILE), TOKENIZER_FILE);
      json = JSON.parse((await readRegularFile(path)).toString('utf8'));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw new Error(`${TOKENIZER_FILE}: ${(e as Error).message}`);
    }
    let config: unknown = {};
    try {
      config = JSON.parse((await readRegularFile(join(dir, 'tokenizer_config.json'))).toString('utf8'));
    } catch {
      config = {};
    }
    return new RunTokenizer(new Tokenizer(json as object, config as object));
  }

  /** One token on its own, as `tokenizer.decode([id])` does (a split multi-byte character decodes to U+FFFD). */
  decodeToken(id: number): string {
    const known = this.memo.get(id);
    if (known !== undefined) return known;
    const text: string = this.tokenizer.decode([id], { skip_special_tokens: false });
    this.memo.set(id, text);
    return text;
  }
}
