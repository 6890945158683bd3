// A small byte-level BPE tokenizer trained on the demo's own conversations, so every token id
// in a demo dump decodes (with any Hugging Face tokenizer reader) to the text it came from.
import { makeConversation, makeProblem } from './conversations.ts';
import { SeededRandom } from './random.ts';

/** The GPT-2 pre-tokenizer pattern (`ByteLevel` with `use_regex: true`). */
const PRETOKEN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

export const SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;
export const MARKUP_TOKENS = ['<think>', '</think>', '<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>'] as const;

/** GPT-2's reversible byte -> printable character map. */
function byteAlphabet(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const map: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) map[b] = printable.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  return map;
}

const BYTE_CHAR = byteAlphabet();
const BYTE_OF = new Map(BYTE_CHAR.map((ch, b) => [ch, b]));
const encoder = new TextEncoder();

function toByteLevel(piece: string): string {
  let s = '';
  for (const b of encoder.encode(piece)) s += BYTE_CHAR[b];
  return s;
}

function pretokenize(text: string): string[] {
  return text.match(PRETOKEN) ?? [];
}

export class DemoTokenizer {
  readonly vocab = new Map<string, number>();
  readonly merges: [string, string][] = [];
  private readonly mergeRank = new Map<string, number>();
  private readonly memo = new Map<string, number[]>();
  private readonly addedIds = new Map<string, number>();
  private readonly splitter: RegExp;
  private byId: string[] | undefined;

  constructor(corpus: Iterable<string>, maxMerges = 3000) {
    for (const ch of BYTE_CHAR) this.vocab.set(ch, this.vocab.size);
    this.train(corpus, maxMerges);
    for (const t of [...SPECIAL_TOKENS, ...MARKUP_TOKENS]) {
      this.addedIds.set(t, this.vocab.size);
      this.vocab.set(t, this.vocab.size);
    }
    const escaped = [...this.addedIds.keys()].map((t) => t.replace(/[|<>/]/g, (c) => '\\' + c));
    this.splitter = new RegExp(`(${escaped.join('|')})`);
  }

  get size(): number {
    return this.vocab.size;
  }

  idOf(token: string): number {
    const id = this.addedIds.get(token) ?? this.vocab.get(token);
    if (id === undefined) throw new Error(`token ${JSON.stringify(token)} is not in the demo vocabulary`);
    return id;
  }

  /** Text of `ids`, as a byte-level decoder gives it. */
  decode(ids: readonly number[]): string {
    if (!this.byId) {
      this.byId = [];
      for (const [token, id] of this.vocab) this.byId[id] = token;
    }
    const bytes: number[] = [];
    for (const id of ids) {
      const token = this.byId[id];
      if (this.addedIds.has(token)) {
        bytes.push(...encoder.encode(token));
        continue;
      }
      for (const ch of token) bytes.push(BYTE_OF.get(ch)!);
    }
    return new TextDecoder().decode(Uint8Array.from(bytes));
  }

  encode(text: string): number[] {
    const ids: number[] = [];
    for (const part of text.split(this.splitter)) {
      if (part === '') continue;
      const added = this.addedIds.get(part);
      if (added !== undefined) {
        ids.push(added);
        continue;
      }
      for (const piece of pretokenize(part)) ids.push(...this.encodePiece(piece));
    }
    return ids;
  }

  /** `tokenizer.json` in the Hugging Face `tokenizers` format. */
  tokenizerJson(): object {
    const vocab: Record<string, number> = {};
    for (const [token, id] of this.vocab) vocab[token] = id;
    return {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: [...this.addedIds].map(([content, id]) => ({
        id,
        content,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: (SPECIAL_TOKENS as readonly string[]).includes(content),
      })),
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true },
      post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: '',
        end_of_word_suffix: '',
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges: this.merges.map(([a, b]) => `${a} ${b}`),
      },
    };
  }

  tokenizerConfig(): object {
    const decoder: Record<string, object> = {};
    for (const [content, id] of this.addedIds) {
      decoder[String(id)] = {
        content,
        lstrip: false,
        normalized: false,
        rstrip: false,
        single_word: false,
        special: (SPECIAL_TOKENS as readonly string[]).includes(content),
      };
    }
    return {
      added_tokens_decoder: decoder,
      bos_token: null,
      eos_token: '<|im_end|>',
      pad_token: '<|endoftext|>',
      clean_up_tokenization_spaces: false,
      errors: 'replace',
      model_max_length: 32768,
      split_special_tokens: false,
      tokenizer_class: 'Qwen2Tokenizer',
      unk_token: null,
    };
  }

  private encodePiece(piece: string): number[] {
    const cached = this.memo.get(piece);
    if (cached) return cached;
    let symbols = [...toByteLevel(piece)];
    // Standard BPE: repeatedly apply the lowest-ranked merge present in the word.
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const rank = this.mergeRank.get(symbols[i] + ' ' + symbols[i + 1]);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          best = i;
        }
      }
      if (best < 0) break;
      const [a, b] = this.merges[bestRank];
      const next: string[] = [];
      for (let i = 0; i < symbols.length; i++) {
        if (i + 1 < symbols.length && symbols[i] === a && symbols[i + 1] === b) {
          next.push(a + b);
          i++;
        } else next.push(symbols[i]);
      }
      symbols = next;
    }
    const ids = symbols.map((s) => this.vocab.get(s)!);
    this.memo.set(piece, ids);
    return ids;
  }

  private train(corpus: Iterable<string>, maxMerges: number): void {
    const counts = new Map<string, number>();
    for (const text of corpus) {
      for (const part of text.split(/<\|im_start\|>|<\|im_end\|>|<\|endoftext\|>|<\/?think>|<\/?tool_call>|<\/?tool_response>/)) {
        for (const piece of pretokenize(part)) {
          const bl = toByteLevel(piece);
          counts.set(bl, (counts.get(bl) ?? 0) + 1);
        }
      }
    }
    const words = [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([w, n]) => ({ symbols: [...w], n }));
    const pairCounts = new Map<string, number>();
    const addPairs = (symbols: string[], n: number, sign: number) => {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const key = symbols[i] + ' ' + symbols[i + 1];
        pairCounts.set(key, (pairCounts.get(key) ?? 0) + sign * n);
      }
    };
    for (const w of words) addPairs(w.symbols, w.n, 1);
    while (this.merges.length < maxMerges) {
      let bestKey = '';
      let bestCount = 1;
      for (const [key, c] of pairCounts) {
        if (c > bestCount || (c === bestCount && c > 1 && key < bestKey)) {
          bestKey = key;
          bestCount = c;
        }
      }
      if (bestKey === '') break;
      const space = bestKey.indexOf(' ');
      const a = bestKey.slice(0, space);
      const b = bestKey.slice(space + 1);
      this.mergeRank.set(bestKey, this.merges.length);
      this.merges.push([a, b]);
      this.vocab.set(a + b, this.vocab.size);
      for (const w of words) {
        const s = w.symbols;
        let hit = false;
        for (let i = 0; i + 1 < s.length; i++) if (s[i] === a && s[i + 1] === b) hit = true;
        if (!hit) continue;
        addPairs(s, w.n, -1);
        const next: string[] = [];
        for (let i = 0; i < s.length; i++) {
          if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
            next.push(a + b);
            i++;
          } else next.push(s[i]);
        }
        w.symbols = next;
        addPairs(next, w.n, 1);
      }
      pairCounts.delete(bestKey);
    }
  }
}

let shared: DemoTokenizer | undefined;

/** The tokenizer every demo run uses: trained once per process on a fixed sample of demo conversations. */
export function demoTokenizer(): DemoTokenizer {
  if (shared) return shared;
  const rng = new SeededRandom(20240611);
  const corpus: string[] = [];
  for (let i = 0; i < 400; i++) {
    const problem = makeProblem(rng, rng.next());
    const conv = makeConversation(rng, problem, { pCorrect: 0.6, rambling: false, toolCalls: rng.int(0, 3) });
    for (const seg of conv.segments) corpus.push(seg.text);
  }
  shared = new DemoTokenizer(corpus);
  return shared;
}
