// Search across every step of a run: words, "exact phrases", /regular expressions/, request or trace ids,
// a sample index or `step:sample`. Each step's texts come from the run's searchable texts (scanned batch by
// batch while its dump is decoded, then kept with a word index that narrows the samples a scan verifies).
import type { SearchEvent, SearchMatch } from '../wire/index.ts';
import { SEARCH_NON_WORD, type StepTexts as RunStepTexts, type StepTextsSource } from '../run/model.ts';
import type { RunSources, SampleText } from './runAnswers.ts';

type StepTexts = RunStepTexts<SampleText>;
import { unreadStepProblem } from '../run/errors.ts';
import { queryTerms } from '../formats/searchQuery.ts';
import { BadArgument } from './limits.ts';
import { regexHits, regexSlices } from './boundedRegex.ts';
import { checkLimit, MAX_QUERY_TERMS, SEARCH_RESULTS } from './limits.ts';

export type { SearchEvent, SearchMatch } from '../wire/index.ts';

/** Fields searched, in the order a match names the first that hits. */
export const SEARCH_FIELDS = ['prompt', 'response', 'conversation', 'label', 'metadata'] as const;
/** Characters of context each side of a hit in a snippet. */
const SNIPPET_CONTEXT = 60;

type TextQuery = Extract<ParsedQuery, { kind: 'text' }>;

export type ParsedQuery =
  | { kind: 'regex'; regex: RegExp; source: string }
  | { kind: 'step_sample'; step: number; sample: number }
  | { kind: 'sample'; sample: number }
  | { kind: 'text'; words: string[]; phrases: string[]; /** The last word is still being typed: it matches word prefixes. */ openWord: string | null; raw: string };

/** Parses a query; an empty one or a bad regular expression is a 400 on `q`. */
export function parseQuery(raw: string): ParsedQuery {
  const t = queryTerms(raw);
  if (t.kind === 'empty') throw new BadArgument('q', 'q: the query is empty');
  if (t.kind === 'regex') {
    if (/[^imsu]/.test(t.flags)) throw new BadArgument('q', `q: unsupported regular-expression flag in '${t.flags}' (use i, m, s, u)`);
    try {
      return { kind: 'regex', regex: new RegExp(t.source, `${t.flags}g`), source: t.source };
    } catch (e) {
      // the engine's message repeats the pattern with the flags it was given (`/(a/g: …`): only its reason is kept
      // (the pattern is in the asker's own box; echoed, a slash-laden one reads as a path the answer scrubs)
      const reason = (e as Error).message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '');
      throw new BadArgument('q', `q: not a regular expression: ${reason}`);
    }
  }
  if (t.kind !== 'text') return t;
  const { words, phrases } = t;
  // the last word is still being typed unless the query ends with a space or a closed quote (searchQuery.ts)
  const open = t.open ? words[words.length - 1]! : null;
  // a word or phrase given twice asks nothing more of a sample (and every one is a pass over every text)
  const whole = [...new Set(open ? words.slice(0, -1) : words)];
  const distinctPhrases = [...new Set(phrases)];
  const terms = whole.length + distinctPhrases.length + (open !== null && !whole.includes(open) ? 1 : 0);
  // only empty phrases (`""`): nothing to look for, as an empty query
  if (terms === 0) throw new BadArgument('q', 'q: the query is empty');
  if (terms > MAX_QUERY_TERMS) throw new BadArgument('q', `q: ${terms} different words and phrases; a search takes at most ${MAX_QUERY_TERMS}`);
  return { kind: 'text', words: whole, phrases: distinctPhrases, openWord: open, raw: raw.trim() };
}

const WORD_CHAR = /[\p{L}\p{N}_]/u;

/**
 * Whether phrase `p` found at `at` in `text` stands as whole words: where it begins or ends with a letter or
 * digit, the text's character beside it is none (`"800"` is not found in `1800`, nor `"fox jump"` in `firefox jumps`).
 */
function phraseAt(text: string, p: string, at: number): boolean {
  const end = at + p.length;
  if (WORD_CHAR.test(p[0]) && at > 0 && WORD_CHAR.test(text[at - 1])) return false;
  return !(WORD_CHAR.test(p[p.length - 1]) && end < text.length && WORD_CHAR.test(text[end]));
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A word as a whole word (or a word prefix), case-insensitive. */
function wordRegex(word: string, prefix: boolean): RegExp {
  const edge = WORD_CHAR.test(word[0]) ? '(?<![\\p{L}\\p{N}_])' : '';
  const end = !prefix && WORD_CHAR.test(word[word.length - 1]) ? '(?![\\p{L}\\p{N}_])' : '';
  return new RegExp(`${edge}${escapeRegex(word)}${end}`, 'giu');
}

const NOT_ASCII = /[^\x00-\x7f]/;

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
  const parts = term.split(SEARCH_NON_WORD);
  const lo = cutStart || SEARCH_NON_WORD.test(term[0] ?? '') ? 1 : 0;
  const hi = cutEnd || SEARCH_NON_WORD.test(term[term.length - 1] ?? '') ? parts.length - 1 : parts.length;
  // A term beginning or ending in punctuation splits into an empty part there, which the bounds skip.
  return parts.slice(lo, Math.max(lo, hi)).filter(Boolean);
}

/** The sample positions that may match a text query (each whole word of it indexed), or null for "all". */
function candidates(st: StepTexts, q: Extract<ParsedQuery, { kind: 'text' }>): Set<number> | null {
  const lookups = new Set([
    ...q.words.flatMap((w) => wholeParts(w, false, false)),
    ...q.phrases.flatMap((p) => wholeParts(p, true, true)),
    ...(q.openWord ? wholeParts(q.openWord, false, true) : []),
  ]);
  let out: Set<number> | null = null;
  for (const w of lookups) {
    const hits = st.lookup(w);
    if (hits === null) return null;
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
  const add = (field: string, a: number, b: number): void => {
    const ranges = hits.get(field);
    if (ranges) ranges.push([a, b]);
    else hits.set(field, [[a, b]]);
  };
  for (const p of q.phrases) {
    let found = false;
    for (const f of SEARCH_FIELDS) {
      const text = lower[f];
      if (!text) continue;
      for (let at = text.indexOf(p); at >= 0; ) {
        if (!phraseAt(text, p, at)) {
          at = text.indexOf(p, at + 1);
          continue;
        }
        add(f, at, at + p.length);
        found = true;
        at = text.indexOf(p, at + p.length);
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

/**
 * The matches of one step, one per sample (its first field with a hit), in batch order. A regular expression
 * scans a slice of the step at a time and lets the event loop serve other requests between slices.
 */
async function* searchStep(st: StepTexts, q: ParsedQuery, run?: string): AsyncGenerator<SearchMatch> {
  if (q.kind === 'regex') {
    const fields = st.texts.map((t) => t.fields);
    for (const slice of regexSlices(fields, SEARCH_FIELDS)) {
      for (const hit of regexHits(fields, SEARCH_FIELDS, q.regex, slice)) {
        const t = st.texts[hit.position];
        yield matchOf(t, hit.field, t.fields[hit.field], hit.ranges, run);
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    return;
  }
  yield* stepMatches(st, q, run);
}

function stepMatches(st: StepTexts, q: Exclude<ParsedQuery, { kind: 'regex' }>, run?: string): SearchMatch[] {
  const out: SearchMatch[] = [];
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

export interface SearchOptions {
  limit?: number;
  signal?: AbortSignal;
  /** Name each match's run (default: when several runs are searched; a caller that chose runs by name asks always). */
  nameRuns?: boolean;
}

/** A run to search: its search state and its name (matches carry the name when several runs are searched). */
export interface SearchTarget {
  search: StepTextsSource<SampleText>;
  run: RunSources;
  /** How matches name the run (default its name). */
  name?: string;
}

/** Searches one run; see `searchRuns`. */
export function searchRun(search: StepTextsSource<SampleText>, run: RunSources, raw: string, opts: SearchOptions = {}): AsyncGenerator<SearchEvent> {
  return searchRuns([{ search, run }], raw, opts);
}

/**
 * Searches every visible step of each run in turn (train steps ascending, then eval steps), yielding matches
 * as each step is scanned, a progress event after each step and a final `done`. Stops early at `limit`
 * matches or when `signal` aborts. A step still being written, or damaged, is skipped (and named in `done.warnings`). With several runs,
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
  // A bare number: the texts holding it are kept (up to `limit`) while the scan looks for its sample, and
  // answered if no sample has that index (one scan for both: a step may have to be decoded to be read).
  const asText = q.kind === 'sample' ? { sample: q.sample, q: parseQuery(`"${q.sample}"`) as TextQuery, kept: [] as SearchMatch[], more: false } : null;
  // `reading` counts a step whose matches are still coming in as scanned.
  const finish = (truncated: boolean, reading = 0, note?: string): SearchEvent => ({
    type: 'done',
    matches: found,
    truncated,
    steps_scanned: done + reading,
    steps_total: scan.length,
    elapsed_ms: Date.now() - started,
    warnings,
    ...(note !== undefined ? { note } : {}),
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
        if (asText && found === 0 && !asText.more) {
          asText.kept.push(...textMatches(batch, asText.q, run));
          if (asText.kept.length > limit) asText.more = true;
        }
        if (held && mayBeId(q)) {
          const ids = idMatches(batch, q, run);
          if (ids) held.ids.push(...ids);
          else if (held.ids.length === 0) held.texts.push(...textMatches(batch, q, run));
          continue;
        }
        for await (const m of searchStep(batch, q, run)) {
          yield { type: 'match', ...m };
          if (++found >= limit) {
            yield finish(true, 1);
            return;
          }
        }
      }
      if (held) out.push(...(held.ids.length ? held.ids : held.texts));
    } catch (e) {
      // A step still being written, or damaged, is skipped and reported (naming its run when there are
      // several): the other steps and runs are still searched, and the matches it gave before are kept.
      const problem = unreadStepProblem(e);
      if (problem === null) throw e;
      warnings.push(`${run !== undefined ? `${run}: ` : ''}${evaluation ? 'eval ' : ''}step ${step}: ${problem}`);
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
  if (asText && found === 0) {
    // No sample has that index: the texts holding the number are the answer, and it says so.
    for (const m of asText.kept.slice(0, limit)) {
      yield { type: 'match', ...m };
      found++;
    }
    yield finish(asText.more, 0, `no sample has index ${asText.sample}: the samples whose text holds ${asText.sample}`);
    return;
  }
  yield finish(false);
}
