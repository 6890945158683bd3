// Search across every step of a run: words, "exact phrases", /regular expressions/, request or trace ids,
// a sample index or `step:sample`. A step is scanned batch by batch while its dump is decoded, its texts then
// kept (memory, and `--cache-dir` when given) with a full-text index (flexsearch) built behind the scans.
import FlexSearch, { type Index as FlexIndex } from 'flexsearch';
import type { SearchEvent, SearchMatch } from '../wire/index.ts';
import type { DerivedEntries } from '../run/model.ts';
import type { RunSources, SampleText } from './runAnswers.ts';
import { DumpStillWriting } from '../run/errors.ts';
import { BadArgument } from './limits.ts';
import { regexHits } from './boundedRegex.ts';
import { checkLimit, SEARCH_RESULTS } from './limits.ts';

export type { SearchEvent, SearchMatch } from '../wire/index.ts';

/** Fields searched, in the order a match names the first that hits. */
export const SEARCH_FIELDS = ['prompt', 'response', 'conversation', 'label', 'metadata'] as const;
/** Characters of context each side of a hit in a snippet. */
const SNIPPET_CONTEXT = 60;
/** Steps whose texts and index stay in memory. */
const STEPS_KEPT = 16;
// 2: the index holds words split and folded here (flexsearch encoder skipped).
const CACHE_VERSION = 2;

type TextQuery = Extract<ParsedQuery, { kind: 'text' }>;

export type ParsedQuery =
  | { kind: 'regex'; regex: RegExp; source: string }
  | { kind: 'step_sample'; step: number; sample: number }
  | { kind: 'sample'; sample: number }
  | { kind: 'text'; words: string[]; phrases: string[]; /** The last word is still being typed: it matches word prefixes. */ openWord: string | null; raw: string };

/** Parses a query; an empty one or a bad regular expression is a 400 on `q`. */
export function parseQuery(raw: string): ParsedQuery {
  const q = raw.trim();
  if (q === '') throw new BadArgument('q', 'q: the query is empty');
  const re = /^\/(.+)\/([a-z]*)$/s.exec(q);
  if (re) {
    const flags = re[2];
    if (/[^imsu]/.test(flags)) throw new BadArgument('q', `q: unsupported regular-expression flag in '${flags}' (use i, m, s, u)`);
    try {
      return { kind: 'regex', regex: new RegExp(re[1], `${flags}g`), source: re[1] };
    } catch (e) {
      throw new BadArgument('q', `q: not a regular expression: ${(e as Error).message}`);
    }
  }
  const ss = /^(\d+):(\d+)$/.exec(q);
  if (ss) return { kind: 'step_sample', step: Number(ss[1]), sample: Number(ss[2]) };
  if (/^\d+$/.test(q)) return { kind: 'sample', sample: Number(q) };
  const phrases: string[] = [];
  const rest = q.replace(/"([^"]*)"?/g, (_, p: string) => {
    if (p.trim()) phrases.push(p.toLowerCase());
    return ' ';
  });
  const words = rest.toLowerCase().split(/\s+/).filter(Boolean);
  // While typing, the last word is incomplete unless the query ends with a space or a closed quote.
  const open = words.length > 0 && !/[\s"]$/.test(raw) ? words[words.length - 1] : null;
  return { kind: 'text', words: open ? words.slice(0, -1) : words, phrases, openWord: open, raw: q };
}

const WORD_CHAR = /[\p{L}\p{N}_]/u;

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A word as a whole word (or a word prefix), case-insensitive. */
function wordRegex(word: string, prefix: boolean): RegExp {
  const edge = WORD_CHAR.test(word[0]) ? '(?<![\\p{L}\\p{N}_])' : '';
  const end = !prefix && WORD_CHAR.test(word[word.length - 1]) ? '(?![\\p{L}\\p{N}_])' : '';
  return new RegExp(`${edge}${escapeRegex(word)}${end}`, 'giu');
}

/** One step's texts, lower-cased once, with an index over them once built. */
interface StepTexts {
  key: string;
  stamp: string;
  texts: SampleText[];
  lower: Record<string, string>[];
  /** Per sample, bit k set once its SEARCH_FIELDS[k] text was looked at, bit 8 + k when it is plain ASCII. */
  ascii: Uint16Array;
  index: FlexIndex | null;
  /** Sample positions by recorded id. */
  ids: Map<string, number[]>;
}

function wordIndex(): FlexIndex {
  // Positions are not scored (resolution 1): the index only narrows which samples a scan verifies. Entries
  // and lookups are words already split and folded here, so flexsearch's own encoder is skipped.
  return new FlexSearch.Index({ tokenize: 'strict', resolution: 1, encode: (text: string) => text.split(' ') });
}

const NON_WORD = /[^\p{L}\p{N}]+/u;
const NOT_ASCII = /[^\x00-\x7f]/;

/**
 * A lower-case word as the index holds it: letters that differ only in case-insensitive matching (ſ and s,
 * ς and σ) made equal, so a word the verifying scan would accept is never missing from the candidates.
 */
function foldWord(w: string): string {
  return NOT_ASCII.test(w) ? w.toUpperCase().toLowerCase() : w;
}

/** Work on an index between two yields to the event loop (ms). */
const INDEX_SLICE_MS = 10;
/** How often a paused index build looks whether the reads it waits for are done (ms). */
const READ_WAIT_MS = 20;

function prepare(key: string, stamp: string, texts: SampleText[]): StepTexts {
  const ids = new Map<string, number[]>();
  texts.forEach((t, i) => {
    for (const id of t.ids) ids.set(id, [...(ids.get(id) ?? []), i]);
  });
  const lower = texts.map((t) => Object.fromEntries(Object.entries(t.fields).map(([k, v]) => [k, v.toLowerCase()])));
  return { key, stamp, texts, lower, ascii: new Uint16Array(texts.length), index: null, ids };
}

/** Builds a step's index a slice at a time, calling `between` (served by the event loop) between slices. */
async function buildIndex(st: StepTexts, between: () => Promise<void>): Promise<FlexIndex> {
  const index = wordIndex();
  let until = performance.now() + INDEX_SLICE_MS;
  // One entry per sample holding each distinct word of all its fields once: what a lookup needs, at a
  // fraction of the cost of indexing every occurrence.
  for (let i = 0; i < st.lower.length; i++) {
    const words = new Set<string>();
    for (const text of Object.values(st.lower[i])) for (const w of text.split(NON_WORD)) if (w) words.add(foldWord(w));
    index.add(i, [...words].join(' '));
    if (performance.now() >= until) {
      await between();
      until = performance.now() + INDEX_SLICE_MS;
    }
  }
  return index;
}

/** The batches of one step as one. */
function joinBatches(key: string, stamp: string, parts: readonly StepTexts[]): StepTexts {
  if (parts.length === 1) return parts[0];
  const texts: SampleText[] = [];
  const lower: Record<string, string>[] = [];
  const ascii = new Uint16Array(parts.reduce((n, p) => n + p.texts.length, 0));
  const ids = new Map<string, number[]>();
  for (const part of parts) {
    const at = texts.length;
    for (const t of part.texts) texts.push(t);
    for (const l of part.lower) lower.push(l);
    ascii.set(part.ascii, at);
    for (const [id, positions] of part.ids) ids.set(id, [...(ids.get(id) ?? []), ...positions.map((i) => i + at)]);
  }
  return { key, stamp, texts, lower, ascii, index: null, ids };
}

/** A step read for the first time: its batches so far, shared by every search that asks while it is read. */
class StepRead {
  readonly batches: StepTexts[] = [];
  private finished = false;
  private error: { cause: unknown } | null = null;
  private wake!: () => void;
  private changed = this.nextChange();

  private nextChange(): Promise<void> {
    return new Promise<void>((r) => (this.wake = r));
  }

  private notify(): void {
    const wake = this.wake;
    this.changed = this.nextChange();
    wake();
  }

  push(batch: StepTexts): void {
    this.batches.push(batch);
    this.notify();
  }

  finish(): void {
    this.finished = true;
    this.notify();
  }

  fail(cause: unknown): void {
    this.error = { cause };
    this.notify();
  }

  /** Every batch, those read already at once and the rest as they come; the read's failure is rethrown. */
  async *read(): AsyncGenerator<StepTexts> {
    for (let i = 0; ; ) {
      while (i < this.batches.length) yield this.batches[i++];
      if (this.error) throw this.error.cause;
      if (this.finished) return;
      await this.changed;
    }
  }
}

function snippetAround(text: string, start: number, end: number, ranges: [number, number][]): { snippet: string; highlights: [number, number][] } {
  const from = Math.max(0, start - SNIPPET_CONTEXT);
  const to = Math.min(text.length, end + SNIPPET_CONTEXT);
  const lead = from > 0 ? '…' : '';
  const snippet = `${lead}${text.slice(from, to).replace(/\s+/g, ' ')}${to < text.length ? '…' : ''}`;
  // Whitespace runs collapse to one space: map the highlight offsets through the same collapse.
  const map = (pos: number): number => lead.length + text.slice(from, pos).replace(/\s+/g, ' ').length;
  const highlights = ranges.filter(([a, b]) => a >= from && b <= to).map(([a, b]): [number, number] => [map(a), map(b)]);
  return { snippet, highlights };
}

function matchOf(t: SampleText, field: string, text: string, ranges: [number, number][], run: string | undefined): SearchMatch {
  const [start, end] = ranges[0];
  const { snippet, highlights } = snippetAround(text, start, end, ranges);
  return {
    ...(run !== undefined ? { run } : {}),
    step: t.step,
    evaluation: t.evaluation,
    sample_index: t.sample_index,
    group_index: t.group_index,
    status: t.status,
    reward: t.reward,
    field,
    snippet,
    highlights,
    match: text.slice(start, end),
  };
}

/** The words of a term that are whole index words: `edges` says whether its first and last part may be cut. */
function wholeParts(term: string, cutStart: boolean, cutEnd: boolean): string[] {
  const parts = term.split(NON_WORD);
  const lo = cutStart || NON_WORD.test(term[0] ?? '') ? 1 : 0;
  const hi = cutEnd || NON_WORD.test(term[term.length - 1] ?? '') ? parts.length - 1 : parts.length;
  // A term beginning or ending in punctuation splits into an empty part there, which the bounds skip.
  return parts.slice(lo, Math.max(lo, hi)).filter(Boolean);
}

/** The sample positions that may match a text query (each whole word of it indexed), or null for "all". */
function candidates(st: StepTexts, q: Extract<ParsedQuery, { kind: 'text' }>): Set<number> | null {
  if (!st.index) return null;
  const lookups = new Set(
    [
      ...q.words.flatMap((w) => wholeParts(w, false, false)),
      ...q.phrases.flatMap((p) => wholeParts(p, true, true)),
      ...(q.openWord ? wholeParts(q.openWord, false, true) : []),
    ].map(foldWord),
  );
  let out: Set<number> | null = null;
  for (const w of lookups) {
    const hits = new Set((st.index.search(w, { limit: st.texts.length }) as (number | string)[]).map(Number));
    const prev: Set<number> | null = out;
    out = prev === null ? hits : new Set([...prev].filter((i: number) => hits.has(i)));
    if (out.size === 0) break;
  }
  return out;
}

/** A word of a query as a regex, with the word itself when it is ASCII (see `textHits`). */
interface WordMatcher {
  re: RegExp;
  ascii: string | null;
}

function wordMatcher(word: string, prefix: boolean): WordMatcher {
  return { re: wordRegex(word, prefix), ascii: NOT_ASCII.test(word) ? null : word };
}

/** Whether field k (of SEARCH_FIELDS) of the sample at `i` is plain ASCII, looked at once, when first asked. */
function asciiField(st: StepTexts, i: number, k: number, text: string): boolean {
  const bits = st.ascii[i];
  if (bits & (1 << k)) return (bits & (256 << k)) !== 0;
  const plain = !NOT_ASCII.test(text);
  st.ascii[i] = bits | (1 << k) | (plain ? 256 << k : 0);
  return plain;
}

/** Every hit of a text query in the sample at `i`: null unless each word and phrase occurs somewhere in it. */
function textHits(st: StepTexts, i: number, q: Extract<ParsedQuery, { kind: 'text' }>, words: WordMatcher[]): Map<string, [number, number][]> | null {
  const lower = st.lower[i];
  const hits = new Map<string, [number, number][]>();
  const add = (field: string, a: number, b: number) => hits.set(field, [...(hits.get(field) ?? []), [a, b]]);
  for (const p of q.phrases) {
    let found = false;
    for (const f of SEARCH_FIELDS) {
      const text = lower[f];
      if (!text) continue;
      for (let at = text.indexOf(p); at >= 0; at = text.indexOf(p, at + p.length)) {
        add(f, at, at + p.length);
        found = true;
      }
    }
    if (!found) return null;
  }
  for (const { re, ascii } of words) {
    let found = false;
    for (let k = 0; k < SEARCH_FIELDS.length; k++) {
      const f = SEARCH_FIELDS[k];
      const text = lower[f];
      if (!text) continue;
      // An ASCII word can only match (case-insensitively) a lower-case ASCII text where it occurs as is: a
      // text without it needs no regex run.
      if (ascii !== null && !text.includes(ascii) && asciiField(st, i, k, text)) continue;
      re.lastIndex = 0;
      for (const m of text.matchAll(re)) {
        add(f, m.index, m.index + m[0].length);
        found = true;
      }
    }
    if (!found) return null;
  }
  return hits;
}

/** The matches of one step, one per sample (its first field with a hit), in batch order. */
export function searchStep(st: StepTexts, q: ParsedQuery, run?: string): SearchMatch[] {
  const out: SearchMatch[] = [];
  if (q.kind === 'regex') {
    const fields = st.texts.map((t) => t.fields);
    for (const hit of regexHits(fields, SEARCH_FIELDS, q.regex)) {
      const t = st.texts[hit.position];
      out.push(matchOf(t, hit.field, t.fields[hit.field], hit.ranges, run));
    }
    return out;
  }
  if (q.kind === 'step_sample' || q.kind === 'sample') {
    for (const t of st.texts) if (t.sample_index === q.sample && (q.kind === 'sample' || t.step === q.step)) out.push(idMatch(t, 'sample_index', String(t.sample_index), run));
    return out;
  }
  return idMatches(st, q, run) ?? textMatches(st, q, run);
}

/** Whether a query may be a recorded id: one token without quotes (ids hold no spaces). */
function mayBeId(q: ParsedQuery): q is TextQuery {
  return q.kind === 'text' && q.phrases.length === 0 && !/[\s"]/.test(q.raw);
}

/** A query that is a recorded id (request, trace, session) names its samples directly: those, or null. */
function idMatches(st: StepTexts, q: TextQuery, run: string | undefined): SearchMatch[] | null {
  const named = mayBeId(q) ? st.ids.get(q.raw) : undefined;
  return named ? named.map((i) => idMatch(st.texts[i], 'id', q.raw, run)) : null;
}

/** The samples holding every word and phrase of a text query. */
function textMatches(st: StepTexts, q: TextQuery, run: string | undefined): SearchMatch[] {
  const out: SearchMatch[] = [];
  const words = [...q.words.map((w) => wordMatcher(w, false)), ...(q.openWord ? [wordMatcher(q.openWord, true)] : [])];
  const cand = candidates(st, q);
  const positions = cand ? [...cand].sort((a, b) => a - b) : st.texts.map((_, i) => i);
  for (const i of positions) {
    const hits = textHits(st, i, q, words);
    if (!hits || hits.size === 0) continue;
    const field = SEARCH_FIELDS.find((f) => hits.has(f))!;
    const ranges = hits.get(field)!.sort((a, b) => a[0] - b[0]);
    out.push(matchOf(st.texts[i], field, st.texts[i].fields[field], ranges, run));
  }
  return out;
}

function idMatch(t: SampleText, field: string, text: string, run: string | undefined): SearchMatch {
  return matchOf(t, field, text, [[0, text.length]], run);
}

/**
 * Per-run search state: each step's texts and index, kept for STEPS_KEPT steps and, with a cache, on disk
 * (texts plus the exported index), invalidated when the step's files change.
 */
export class RunSearch {
  private readonly steps = new Map<string, StepTexts>();
  private readonly reading = new Map<string, StepRead>();

  constructor(
    private readonly run: RunSources,
    /** Whether scanned steps get an index (a one-shot scan without a cache has no later use for one). */
    private readonly indexing = true,
    /** Where indexes outlive the process (`--cache-dir`), handed in by the server or the command; null keeps none. */
    private readonly cache: DerivedEntries | null = null,
  ) {}

  /**
   * One step's texts in batches: at once when known (memory or the cache), else as the step's dump is read.
   * That read is shared by the searches asking meanwhile and goes on to the end when they stop listening
   * (a query typed further finds the step whole).
   */
  async *stepBatches(step: number, evaluation: boolean): AsyncGenerator<StepTexts> {
    const key = `${evaluation ? 'eval_' : ''}${step}`;
    const stamp = await this.run.stepStamp(step, evaluation);
    const known = this.steps.get(key);
    if (known && known.stamp === stamp) {
      // Most recently used last.
      this.steps.delete(key);
      this.steps.set(key, known);
      yield known;
      return;
    }
    const id = `${key}\n${stamp}`;
    let read = this.reading.get(id);
    if (!read) {
      read = new StepRead();
      this.reading.set(id, read);
      void this.readStep(read, key, stamp, step, evaluation).finally(() => this.reading.delete(id));
    }
    yield* read.read();
  }

  private async readStep(read: StepRead, key: string, stamp: string, step: number, evaluation: boolean): Promise<void> {
    try {
      const cached = await this.fromCache(key, stamp);
      if (cached) read.push(cached);
      else
        for await (const batch of this.run.sampleTextBatches(step, evaluation)) {
          if (this.stopped) throw new Error('the search state was stopped');
          read.push(prepare(key, stamp, batch));
        }
      const st = joinBatches(key, stamp, read.batches.length ? read.batches : [prepare(key, stamp, [])]);
      this.steps.set(key, st);
      while (this.steps.size > STEPS_KEPT) this.steps.delete(this.steps.keys().next().value as string);
      read.finish();
      // The index is built once the step has been read, behind the scans, so no answer waits for it.
      this.scheduleIndex(st);
    } catch (e) {
      read.fail(e);
    }
  }

  private stopped = false;

  /** Ends the reads still going on (their steps are not kept): for a process about to exit. */
  stop(): void {
    this.stopped = true;
  }

  private queue: Promise<void> = Promise.resolve();

  /**
   * Builds the index of a scanned step (its first use) and writes the step to the cache, one step at a
   * time behind the scans, so no answer waits for an index.
   */
  scheduleIndex(st: StepTexts): void {
    if (!this.indexing || st.index || this.queued.has(st)) return;
    this.queued.add(st);
    this.queue = this.queue
      .then(() => new Promise<void>((r) => setImmediate(r)))
      .then(async () => {
        if (!st.index) st.index = await buildIndex(st, () => this.noReads());
        await this.toCache(st);
      })
      .catch(() => {})
      .finally(() => this.queued.delete(st));
  }

  private readonly queued = new Set<StepTexts>();

  /**
   * Resolves on the next turn of the event loop once no step is being read: an index is built in the time
   * the reads leave (a cold scan of the next steps goes first).
   */
  private async noReads(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    while (this.reading.size > 0 && !this.stopped) await new Promise((r) => setTimeout(r, READ_WAIT_MS));
  }

  /** Resolves once every scheduled index is built (and cached). */
  idle(): Promise<void> {
    return this.queue;
  }

  private async fromCache(key: string, stamp: string): Promise<StepTexts | null> {
    const text = (await this.cache?.read(`search_${key}.json`)) ?? null;
    if (text === null) return null;
    try {
      const doc = JSON.parse(text) as { version: number; stamp: string; texts: SampleText[]; index: Record<string, string> };
      if (doc.version !== CACHE_VERSION || doc.stamp !== stamp) return null;
      const st = prepare(key, stamp, doc.texts);
      const index = wordIndex();
      for (const [k, v] of Object.entries(doc.index)) index.import(k, v);
      st.index = index;
      return st;
    } catch {
      // A damaged cache entry is rebuilt from the dump.
      return null;
    }
  }

  private async toCache(st: StepTexts): Promise<void> {
    const index = st.index;
    if (!index) return;
    await this.cache?.write(`search_${st.key}.json`, () => {
      const parts: Record<string, string> = {};
      index.export((k: string | number, v: unknown) => {
        parts[String(k)] = v as string;
      });
      return JSON.stringify({ version: CACHE_VERSION, stamp: st.stamp, texts: st.texts, index: parts });
    });
  }
}

export interface SearchOptions {
  limit?: number;
  signal?: AbortSignal;
  /** Name each match's run (default: when several runs are searched; a caller that chose runs by name asks always). */
  nameRuns?: boolean;
}

/** A run to search: its search state and its name (matches carry the name when several runs are searched). */
export interface SearchTarget {
  search: RunSearch;
  run: RunSources;
  /** How matches name the run (default its name). */
  name?: string;
}

/** Searches one run; see `searchRuns`. */
export function searchRun(search: RunSearch, run: RunSources, raw: string, opts: SearchOptions = {}): AsyncGenerator<SearchEvent> {
  return searchRuns([{ search, run }], raw, opts);
}

/**
 * Searches every visible step of each run in turn (train steps ascending, then eval steps), yielding matches
 * as each step is scanned, a progress event after each step and a final `done`. Stops early at `limit`
 * matches or when `signal` aborts. A step still being written is skipped (and reported). With several runs,
 * each match names its run.
 */
export async function* searchRuns(targets: readonly SearchTarget[], raw: string, opts: SearchOptions = {}): AsyncGenerator<SearchEvent> {
  const q = parseQuery(raw);
  const limit = checkLimit(SEARCH_RESULTS, opts.limit ?? SEARCH_RESULTS.fallback);
  const named = opts.nameRuns ?? targets.length > 1;
  const steps: { target: SearchTarget; step: number; evaluation: boolean }[] = [];
  for (const target of targets) {
    const ids = await target.run.rolloutIds();
    for (const step of ids.train) steps.push({ target, step, evaluation: false });
    for (const step of ids.eval) steps.push({ target, step, evaluation: true });
  }
  const scan = q.kind === 'step_sample' ? steps.filter((s) => s.step === q.step) : steps;
  const started = Date.now();
  let found = 0;
  let done = 0;
  const warnings: string[] = [];
  // `reading` counts a step whose matches are still coming in as scanned.
  const finish = (truncated: boolean, reading = 0): SearchEvent => ({
    type: 'done',
    matches: found,
    truncated,
    steps_scanned: done + reading,
    steps_total: scan.length,
    elapsed_ms: Date.now() - started,
    warnings,
  });
  for (const { target, step, evaluation } of scan) {
    if (opts.signal?.aborted) return;
    const run = named ? (target.name ?? target.run.name) : undefined;
    // A query that may be a recorded id answers the step's id matches when it has any: its text matches
    // are held back until the whole step is read. Any other query's matches go out batch by batch.
    const held = mayBeId(q) ? { ids: [] as SearchMatch[], texts: [] as SearchMatch[] } : null;
    const out: SearchMatch[] = [];
    try {
      for await (const batch of target.search.stepBatches(step, evaluation)) {
        if (opts.signal?.aborted) return;
        if (held && mayBeId(q)) {
          const ids = idMatches(batch, q, run);
          if (ids) held.ids.push(...ids);
          else if (held.ids.length === 0) held.texts.push(...textMatches(batch, q, run));
          continue;
        }
        for (const m of searchStep(batch, q, run)) {
          yield { type: 'match', ...m };
          if (++found >= limit) {
            yield finish(true, 1);
            return;
          }
        }
      }
      if (held) out.push(...(held.ids.length ? held.ids : held.texts));
    } catch (e) {
      // A step still being written is skipped (and reported); the matches it gave before are kept.
      if (!(e instanceof DumpStillWriting)) throw e;
      warnings.push(`step ${step}: ${e.message}`);
    }
    done++;
    for (const m of out) {
      yield { type: 'match', ...m };
      if (++found >= limit) {
        yield finish(true);
        return;
      }
    }
    yield { type: 'progress', ...(named ? { run: target.name ?? target.run.name } : {}), step, evaluation, steps_scanned: done, steps_total: scan.length };
  }
  yield finish(false);
}
