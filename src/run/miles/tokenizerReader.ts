// The run's tokenizer (`tokenizer/tokenizer.json`, loaded with the first token read) and the single-token
// texts kept in the cache directory that spare loading it.
import type { RunTokenizer } from '../tokenizer.ts';
import { TokenTexts } from './tokenTexts.ts';
import type { DumpFiles } from './dumpFiles.ts';
import { TOKENIZER_FILE } from '../../formats/miles/layout.ts';

export class TokenizerReader {
  private tokenizer: Promise<RunTokenizer | null> | undefined;
  private texts: Promise<TokenTexts> | undefined;

  constructor(private readonly files: DumpFiles) {}

  /** Single-token texts kept in the cache directory for the tokenizer as it was when first asked (read once). */
  tokenTexts(): Promise<TokenTexts> {
    this.texts ??= TokenTexts.open(this.files.cacheDir, this.files.runDir);
    return this.texts;
  }

  runTokenizer(): Promise<RunTokenizer | null> {
    // A damaged tokenizer costs only the token texts (ids still answer); it is listed in the warnings.
    // Loaded with the first token read (the tokenizer library is not needed before one).
    this.tokenizer ??= import('../tokenizer.ts').then(({ RunTokenizer }) => RunTokenizer.load(this.files.runDir)).catch((e: unknown) => {
      const message = (e as Error).message ?? String(e);
      this.files.noteLayout(TOKENIZER_FILE, `${message.replace(/^\S*tokenizer\.json: /, '').replace(/: skipped$/, '')}: token texts skipped`);
      return null;
    });
    return this.tokenizer;
  }

  /** Settles once the token texts asked to be saved so far are written (tests). */
  async saved(): Promise<void> {
    await (await this.texts)?.saved();
  }
}
