// What a search opened a sample at (`find=` in its address), read as the header search reads a query, so the
// Sample view highlights what the query matched: its words in sequence, its "phrases" and each of its words
// (whole words, the last one typed as a prefix), or the matches of its /regular expression/. The grammar is the
// server's (src/formats/searchQuery.ts).
import type { SearchMatch } from '../../../src/wire/index.ts';
import { queryTerms, textTerms } from '../../../src/formats/searchQuery.ts';

/** One thing to highlight: its pattern, and its rank (0: the most specific, which is scrolled to). */
export interface FindTerm {
  re: RegExp;
  rank: number;
}

/** A `[start, end)` stretch of a text to highlight, and the rank of the term that found it. */
export type FoundRange = [start: number, end: number, rank: number];

export interface Finder {
  /** Most specific first: the words in sequence, then the phrases and the words, longer before shorter. */
  terms: FindTerm[];
}

/** Highlights kept per text, so a pattern that matches nearly everywhere cannot stall the page. */
const MAX_RANGES = 5000;

const WORD_CHAR = /[\p{L}\p{N}_]/u;
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `body` as a pattern that stands as whole words where it begins (and, unless `prefix`, ends) with a letter or digit. */
function whole(body: string, first: string, last: string, prefix: boolean): string {
  const start = WORD_CHAR.test(first) ? '(?<![\\p{L}\\p{N}_])' : '';
  const end = !prefix && WORD_CHAR.test(last) ? '(?![\\p{L}\\p{N}_])' : '';
  return `${start}${body}${end}`;
}

/** Reads a `find` value; null when it asks for nothing (or is a regular expression this browser cannot run). */
export function parseFind(find: string): Finder | null {
  const read = queryTerms(find);
  if (read.kind === 'empty') return null;
  if (read.kind === 'regex') {
    try {
      return { terms: [{ re: new RegExp(read.source, `${[...new Set(read.flags.replace(/[^imsu]/g, ''))].join('')}g`), rank: 0 }] };
    } catch {
      return null;
    }
  }
  // a number (a sample index, `step:sample`) found in a text is highlighted as the word it is
  const { words, phrases, open } = read.kind === 'text' ? read : textTerms(find);
  const terms: { source: string; length: number; rank: number }[] = [];
  if (words.length > 1) {
    const first = words[0]!;
    const last = words.at(-1)!;
    terms.push({ source: whole(words.map(escape).join('\\s+'), first[0]!, last.at(-1)!, open), length: Infinity, rank: 0 });
  }
  for (const p of new Set(phrases)) terms.push({ source: whole(escape(p), p[0]!, p.at(-1)!, false), length: p.length, rank: 0 });
  const distinct = [...new Set(words)];
  distinct.forEach((w, i) => {
    const prefix = open && i === distinct.length - 1 && w === words.at(-1) && !words.slice(0, -1).includes(w);
    terms.push({ source: whole(escape(w), w[0]!, w.at(-1)!, prefix), length: w.length, rank: 0 });
  });
  // the most specific first: the words in sequence, then longer phrases and words before shorter ones
  terms.sort((a, b) => b.length - a.length);
  return { terms: terms.map((t, rank) => ({ re: new RegExp(t.source, 'giu'), rank })) };
}

/** Whether `text` holds anything `finder` highlights. */
export function holds(finder: Finder | null, text: string): boolean {
  if (!finder) return false;
  return finder.terms.some(({ re }) => {
    re.lastIndex = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      if (m[0].length > 0) return true;
      re.lastIndex++;
    }
    return false;
  });
}

/**
 * Only the most specific term of `finder` that `text` holds (null when it holds none): what decides which messages,
 * thinking and folded texts open, so a common word of the query does not unfold every text that has it.
 */
export function mostSpecific(finder: Finder | null, text: string): Finder | null {
  const term = finder?.terms.find((t) => holds({ terms: [t] }, text));
  return term ? { terms: [term] } : null;
}

/**
 * The stretches of `text` to highlight, in text order: each term's matches (never empty) that overlap none of
 * a more specific term's (a word inside its matched sequence is that sequence's).
 */
export function foundRanges(finder: Finder | null, text: string): FoundRange[] {
  if (!finder) return [];
  const out: FoundRange[] = [];
  for (const { re, rank } of finder.terms) {
    const before = out.length;
    re.lastIndex = 0;
    for (let m = re.exec(text); m && out.length < MAX_RANGES; m = re.exec(text)) {
      const a = m.index;
      const b = a + m[0].length;
      if (b === a) {
        re.lastIndex++;
        continue;
      }
      let free = true;
      for (let k = 0; k < before && free; k++) free = b <= out[k]![0] || a >= out[k]![1];
      if (free) out.push([a, b, rank]);
    }
  }
  return out.sort((x, y) => x[0] - y[0]);
}

/**
 * The `find=` a search result opens its sample with: the query itself (its words, phrases or regular
 * expression), or none for a hit on an id or a sample index. A bare number searched in the texts is a phrase.
 */
export function findOfMatch(m: Pick<SearchMatch, 'field' | 'match'>, query: string | undefined): string | undefined {
  if (m.field === 'id' || m.field === 'sample_index') return undefined;
  const q = query?.trim() ?? '';
  if (q === '') return m.match.includes('"') ? m.match : `"${m.match}"`;
  if (/^\d+$/.test(q)) return `"${q}"`;
  return q;
}
