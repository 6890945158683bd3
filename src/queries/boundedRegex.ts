// A user's regular expression run over sample texts with a time limit. JavaScript regexes backtrack: a
// pattern such as /(a+)+$/ takes exponential time on a text it almost matches, and nothing can interrupt
// a running regex on the thread that runs it — except a script run in a vm context with a timeout, whose
// watchdog terminates it. So the scan loop runs there, over the same strings (nothing is copied).
import { Script, createContext } from 'node:vm';
import { BadArgument } from './limits.ts';

/**
 * A step's texts are scanned a slice at a time, the event loop served between slices: at most this many
 * samples, or this many characters, a slice.
 */
const SLICE_TEXTS = 64;
const SLICE_CHARS = 1 << 20;
/**
 * How long one slice may take before the query is refused. An expression that scans a megabyte in a
 * quarter of a second backtracks far beyond any useful pattern; the other requests wait at most this long.
 */
export const REGEX_SLICE_LIMIT_MS = 250;
/** Hits of one field a match reports. */
const RANGES_KEPT = 8;

/** Per sample with a hit: its position, the first field (by `fields` order) that hits, and that field's hit ranges. */
export interface RegexHit {
  position: number;
  field: string;
  ranges: [number, number][];
}

const context = createContext(Object.create(null));
// Runs in the context: `input` is { texts, fields, re, kept }; returns flat [position, fieldNo, ranges] triples.
const scanScript = new Script(`(() => {
  const { texts, fields, re, kept, from, to } = input;
  const out = [];
  for (let i = from; i < to; i++) {
    const own = texts[i];
    for (let f = 0; f < fields.length; f++) {
      const text = own[fields[f]];
      if (!text) continue;
      re.lastIndex = 0;
      const ranges = [];
      for (const m of text.matchAll(re)) {
        if (m[0].length === 0) break;
        ranges.push([m.index, m.index + m[0].length]);
        if (ranges.length >= kept) break;
      }
      if (ranges.length) {
        out.push(i, f, ranges);
        break;
      }
    }
  }
  return out;
})()`);

/** The slices `[from, to)` a step's texts are scanned in (see SLICE_TEXTS). */
export function regexSlices(texts: readonly Record<string, string>[], fields: readonly string[]): [number, number][] {
  const out: [number, number][] = [];
  let from = 0;
  let chars = 0;
  for (let i = 0; i < texts.length; i++) {
    for (const f of fields) chars += texts[i][f]?.length ?? 0;
    if (i + 1 - from >= SLICE_TEXTS || chars >= SLICE_CHARS) {
      out.push([from, i + 1]);
      from = i + 1;
      chars = 0;
    }
  }
  if (from < texts.length) out.push([from, texts.length]);
  return out;
}

/**
 * Each text of `[from, to)`'s first field (in `fields` order) holding a (non-empty) match of `re`, with up to
 * 8 ranges; a scan that outlives `limitMs` is refused as a BadArgument on `q` (the thread is free again at once).
 */
export function regexHits(
  texts: readonly Record<string, string>[],
  fields: readonly string[],
  re: RegExp,
  [from, to]: readonly [number, number] = [0, texts.length],
  limitMs = REGEX_SLICE_LIMIT_MS,
): RegexHit[] {
  context.input = { texts, fields, re, kept: RANGES_KEPT, from, to };
  let flat: unknown[];
  try {
    flat = scanScript.runInContext(context, { timeout: limitMs }) as unknown[];
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      throw new BadArgument(
        'q',
        `q: the regular expression took over ${limitMs / 1000} s on ${to - from} sample${to - from === 1 ? '' : 's'} and was stopped (it backtracks too much; simplify it, e.g. no nested repetition like (a+)+)`,
      );
    }
    throw e;
  } finally {
    context.input = undefined;
  }
  const out: RegexHit[] = [];
  for (let k = 0; k < flat.length; k += 3) {
    const ranges = (flat[k + 2] as number[][]).map(([a, b]): [number, number] => [a, b]);
    out.push({ position: flat[k] as number, field: fields[flat[k + 1] as number], ranges });
  }
  return out;
}
