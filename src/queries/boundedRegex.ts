// A user's regular expression run over sample texts with a time limit. JavaScript regexes backtrack: a
// pattern such as /(a+)+$/ takes exponential time on a text it almost matches, and nothing can interrupt
// a running regex on the thread that runs it — except a script run in a vm context with a timeout, whose
// watchdog terminates it. So the scan loop runs there, over the same strings (nothing is copied).
import { Script, createContext } from 'node:vm';
import { BadArgument } from './limits.ts';

/** How long one scan (one batch of a step's samples) may take before the query is refused. */
export const REGEX_SCAN_LIMIT_MS = 2000;
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
  const { texts, fields, re, kept } = input;
  const out = [];
  for (let i = 0; i < texts.length; i++) {
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

/**
 * Each text's first field (in `fields` order) holding a (non-empty) match of `re`, with up to 8 ranges;
 * a scan that outlives `limitMs` is refused as a BadArgument on `q` (the thread is free again at once).
 */
export function regexHits(texts: readonly Record<string, string>[], fields: readonly string[], re: RegExp, limitMs = REGEX_SCAN_LIMIT_MS): RegexHit[] {
  context.input = { texts, fields, re, kept: RANGES_KEPT };
  let flat: unknown[];
  try {
    flat = scanScript.runInContext(context, { timeout: limitMs }) as unknown[];
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      throw new BadArgument('q', `q: the regular expression took over ${limitMs / 1000} s on one step and was stopped (it backtracks too much; simplify it, e.g. no nested repetition like (a+)+)`);
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
