// Search across every step of a run: words, "exact phrases", /regular expressions/, request or trace ids,
// a sample index or `step:sample`. Each step's texts are read once, kept (memory, and `--cache-dir` when
// given) with a full-text index (flexsearch) built after its first scan; matches stream out step by step.
import FlexSearch, { type Index as FlexIndex } from 'flexsearch';
import type { SearchEvent, SearchMatch } from '../wire/index.ts';
import { readableStep, type AnswerRun, type SampleText } from './answerRun.ts';
import { BadArgument } from '../run/errors.ts';
import { checkLimit, SEARCH_RESULTS } from './limits.ts';

export type { SearchEvent, SearchMatch } from '../wire/index.ts';

/** Fields searched, in the order a match names the first that hits. */
export const SEARCH_FIELDS = ['prompt', 'response', 'conversation', 'label', 'metadata'] as const;
/** Characters of context each side of a hit in a snippet. */
const SNIPPET_CONTEXT = 60;
/** Steps whose texts and index stay in memory. */
const STEPS_KEPT = 16;
const CACHE_VERSION = 1;

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
  index: FlexIndex | null;
  /** Sample positions by recorded id. */
  ids: Map<string, number[]>;
}

function wordIndex(): FlexIndex {
  // Positions are not scored (resolution 1): the index only narrows which samples a scan verifies.
  return new FlexSearch.Index({ tokenize: 'strict', resolution: 1 });
}

const NON_WORD = /[^\p{L}\p{N}]+/u;

function prepare(key: string, stamp: string, texts: SampleText[]): StepTexts {
  const ids = new Map<string, number[]>();
  texts.forEach((t, i) => {
    for (const id of t.ids) ids.set(id, [...(ids.get(id) ?? []), i]);
  });
  const lower = texts.map((t) => Object.fromEntries(Object.entries(t.fields).map(([k, v]) => [k, v.toLowerCase()])));
  return { key, stamp, texts, lower, index: null, ids };
}

function buildIndex(st: StepTexts): FlexIndex {
  const index = wordIndex();
  // One entry per sample holding each distinct word of all its fields once: what a lookup needs, at a
  // fraction of the cost of indexing every occurrence.
  st.lower.forEach((fields, i) => {
    const words = new Set<string>();
    for (const text of Object.values(fields)) for (const w of text.split(NON_WORD)) if (w) words.add(w);
    index.add(i, [...words].join(' '));
  });
  return index;
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
  const lookups = new Set([
    ...q.words.flatMap((w) => wholeParts(w, false, false)),
    ...q.phrases.flatMap((p) => wholeParts(p, true, true)),
    ...(q.openWord ? wholeParts(q.openWord, false, true) : []),
  ]);
  let out: Set<number> | null = null;
  for (const w of lookups) {
    const hits = new Set((st.index.search(w, { limit: st.texts.length }) as (number | string)[]).map(Number));
    const prev: Set<number> | null = out;
    out = prev === null ? hits : new Set([...prev].filter((i: number) => hits.has(i)));
    if (out.size === 0) break;
  }
  return out;
}

/** Every hit of a text query in one sample: null unless each word and phrase occurs somewhere in it. */
function textHits(lower: Record<string, string>, q: Extract<ParsedQuery, { kind: 'text' }>, res: RegExp[]): Map<string, [number, number][]> | null {
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
  for (const re of res) {
    let found = false;
    for (const f of SEARCH_FIELDS) {
      const text = lower[f];
      if (!text) continue;
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
    st.texts.forEach((t) => {
      for (const f of SEARCH_FIELDS) {
        const text = t.fields[f];
        if (!text) continue;
        q.regex.lastIndex = 0;
        const ranges: [number, number][] = [];
        for (const m of text.matchAll(q.regex)) {
          if (m[0].length === 0) break;
          ranges.push([m.index, m.index + m[0].length]);
          if (ranges.length >= 8) break;
        }
        if (ranges.length) {
          out.push(matchOf(t, f, text, ranges, run));
          return;
        }
      }
    });
    return out;
  }
  if (q.kind === 'step_sample' || q.kind === 'sample') {
    for (const t of st.texts) if (t.sample_index === q.sample && (q.kind === 'sample' || t.step === q.step)) out.push(idMatch(t, 'sample_index', String(t.sample_index), run));
    return out;
  }
  // A query that is a recorded id (request, trace, session) names its samples directly.
  const named = st.ids.get(q.raw);
  if (named) return named.map((i) => idMatch(st.texts[i], 'id', q.raw, run));
  const res = [...q.words.map((w) => wordRegex(w, false)), ...(q.openWord ? [wordRegex(q.openWord, true)] : [])];
  const cand = candidates(st, q);
  const positions = cand ? [...cand].sort((a, b) => a - b) : st.texts.map((_, i) => i);
  for (const i of positions) {
    const hits = textHits(st.lower[i], q, res);
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
  private readonly building = new Map<string, Promise<StepTexts>>();

  constructor(
    private readonly run: AnswerRun,
    /** Whether scanned steps get an index (a one-shot scan without a cache has no later use for one). */
    private readonly indexing = true,
  ) {}

  /** One step's texts (memory, the cache, or the dump), with its index when built. */
  async stepTexts(step: number, evaluation: boolean): Promise<StepTexts> {
    const key = `${evaluation ? 'eval_' : ''}${step}`;
    const stamp = await this.run.stepStamp(step, evaluation);
    const known = this.steps.get(key);
    if (known && known.stamp === stamp) {
      // Most recently used last.
      this.steps.delete(key);
      this.steps.set(key, known);
      return known;
    }
    const running = this.building.get(`${key}\n${stamp}`);
    if (running) return running;
    const p = (async () => {
      const st = (await this.fromCache(key, stamp)) ?? prepare(key, stamp, await this.run.sampleTexts(step, evaluation));
      this.steps.set(key, st);
      while (this.steps.size > STEPS_KEPT) this.steps.delete(this.steps.keys().next().value as string);
      return st;
    })().finally(() => this.building.delete(`${key}\n${stamp}`));
    this.building.set(`${key}\n${stamp}`, p);
    return p;
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
        if (!st.index) st.index = buildIndex(st);
        await this.toCache(st);
      })
      .catch(() => {})
      .finally(() => this.queued.delete(st));
  }

  private readonly queued = new Set<StepTexts>();

  /** Resolves once every scheduled index is built (and cached). */
  idle(): Promise<void> {
    return this.queue;
  }

  private async fromCache(key: string, stamp: string): Promise<StepTexts | null> {
    const text = await this.run.readCache(`search_${key}.json`);
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
    await this.run.writeCache(`search_${st.key}.json`, () => {
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
  run: AnswerRun;
  /** How matches name the run (default its name). */
  name?: string;
}

/** Searches one run; see `searchRuns`. */
export function searchRun(search: RunSearch, run: AnswerRun, raw: string, opts: SearchOptions = {}): AsyncGenerator<SearchEvent> {
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
  const finish = (truncated: boolean): SearchEvent => ({
    type: 'done',
    matches: found,
    truncated,
    steps_scanned: done,
    steps_total: scan.length,
    elapsed_ms: Date.now() - started,
    warnings,
  });
  for (const { target, step, evaluation } of scan) {
    if (opts.signal?.aborted) return;
    const st = await readableStep(() => target.search.stepTexts(step, evaluation), step, warnings);
    done++;
    if (st) {
      for (const m of searchStep(st, q, named ? (target.name ?? target.run.name) : undefined)) {
        yield { type: 'match', ...m };
        if (++found >= limit) {
          yield finish(true);
          return;
        }
      }
    }
    yield { type: 'progress', ...(named ? { run: target.name ?? target.run.name } : {}), step, evaluation, steps_scanned: done, steps_total: scan.length };
    // The index is built once a step has been scanned, so the first answer never waits for it.
    if (st && !st.index) target.search.scheduleIndex(st);
  }
  yield finish(false);
}
