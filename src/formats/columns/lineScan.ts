// Byte-level scanning primitives for the fixed-shape JSONL lines the writer emits (compact, fixed key order).
// Every scanner returns NaN / -1 to mean "not the simple shape": callers then fall back to JSON.parse,
// so the fast path never changes a result, it only skips work.

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];
const TWO53 = 9007199254740992;

/** Cursor written by the scanners: the index just past what they consumed. */
export const cursor = { pos: 0 };

/**
 * A JSON number starting at `i`, as the same double JSON.parse gives. Fast paths:
 * * mantissa below 2^53 with at most 22 fraction digits: one division by an exact power of ten,
 *   which IEEE rounds correctly (Clinger);
 * * a longer mantissa such as a `time.time()` stamp `1755800010.5234568`: integer part I and
 *   fraction F/10^k (both exact below 2^53, 10^k <= I) summed; the quotient's error (<= 2^-54) is
 *   smaller than the distance from any decimal of k digits to a rounding midpoint at I's magnitude
 *   (>= 1/(10^k·2^(53-E)) with 2^E <= I), and an exact midpoint makes the quotient exact, so the sum
 *   rounds like the correct parse.
 * Exponents and anything else go through Number() on the text. NaN = not a JSON number.
 */
export function scanNumber(buf: Uint8Array, i: number, end: number): number {
  const start = i;
  let neg = false;
  if (buf[i] === 45) {
    neg = true;
    i++;
  }
  let c = buf[i];
  if (i >= end || c < 48 || c > 57) return NaN;
  let ip = 0;
  if (c === 48) {
    i++;
    c = buf[i];
    if (c >= 48 && c <= 57) return NaN; // leading zero: not JSON
  } else {
    while (i < end && c >= 48 && c <= 57) {
      ip = ip * 10 + (c - 48);
      c = buf[++i];
    }
  }
  let fp = 0;
  let frac = 0;
  if (c === 46) {
    c = buf[++i];
    if (i >= end || c < 48 || c > 57) return NaN;
    while (i < end && c >= 48 && c <= 57) {
      fp = fp * 10 + (c - 48);
      frac++;
      c = buf[++i];
    }
  }
  if (c === 101 || c === 69) {
    i++;
    c = buf[i];
    if (c === 43 || c === 45) c = buf[++i];
    if (i >= end || c < 48 || c > 57) return NaN;
    while (i < end && c >= 48 && c <= 57) c = buf[++i];
    cursor.pos = i;
    return Number(latin1(buf, start, i));
  }
  cursor.pos = i;
  let v: number;
  if (frac === 0) {
    if (ip >= TWO53) return Number(latin1(buf, start, i));
    v = ip;
  } else if (frac <= 22 && ip < TWO53 && fp < TWO53) {
    const p = POW10[frac];
    const m = ip * p + fp;
    if (m < TWO53) v = m / p;
    else if (p <= ip) v = ip + fp / p;
    else return Number(latin1(buf, start, i));
  } else {
    return Number(latin1(buf, start, i));
  }
  return neg ? -v : v;
}

/**
 * A JSON string body starting just after its opening quote: returns the index of the closing quote,
 * or -1 when it holds an escape or a control byte (fallback).
 */
export function scanPlainString(buf: Uint8Array, i: number, end: number): number {
  for (; i < end; i++) {
    const c = buf[i];
    if (c === 34) return i;
    if (c === 92 || c < 32) return -1;
  }
  return -1;
}

/** True when `lit` occurs at `i`. */
export function matchBytes(buf: Uint8Array, i: number, lit: Uint8Array): boolean {
  if (i + lit.length > buf.length) return false;
  for (let k = 0; k < lit.length; k++) if (buf[i + k] !== lit[k]) return false;
  return true;
}

/** The JSON number after the key literal `key` at `i` (`cursor.pos` just past it); NaN when `key` is not there or no number follows. */
export function scanNumberAfter(buf: Uint8Array, i: number, key: Uint8Array, end: number): number {
  return matchBytes(buf, i, key) ? scanNumber(buf, i + key.length, end) : NaN;
}

export function bytesOf(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

export function latin1(buf: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i++) s += String.fromCharCode(buf[i]);
  return s;
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

export function utf8Slice(buf: Uint8Array, start: number, end: number): string {
  return utf8.decode(buf.subarray(start, end));
}

/** Exact-key check for records read through JSON.parse: same key set as the writer's dataclass. */
export function hasExactKeys(o: unknown, keys: readonly string[]): o is Record<string, unknown> {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return false;
  let n = 0;
  for (const k in o as object) {
    if (!keys.includes(k)) return false;
    n++;
  }
  return n === keys.length;
}

export function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

export function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

const NONFINITE: Record<string, number> = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };
const MARK = '\u0000nonfinite:';

/**
 * JSON.parse that also accepts Python's bare `NaN`, `Infinity` and `-Infinity` (json.dumps writes them
 * for non-finite floats). Throws like JSON.parse on anything else.
 */
export function parsePythonJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
  }
  let out = '';
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inStr) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') {
      inStr = true;
      out += c;
      continue;
    }
    const rest = text.startsWith('-Infinity', i) ? '-Infinity' : text.startsWith('Infinity', i) ? 'Infinity' : text.startsWith('NaN', i) ? 'NaN' : '';
    if (rest) {
      out += JSON.stringify(MARK + rest);
      i += rest.length - 1;
      continue;
    }
    out += c;
  }
  return JSON.parse(out, (_k, v) => (typeof v === 'string' && v.startsWith(MARK) ? NONFINITE[v.slice(MARK.length)] : v));
}

/** Reports a skipped complete line: 1-based line number within the file and why. */
export type BadLine = (line: number, message: string) => void;

/** Index of the `\n` ending the line that starts at `p`, or `end` for a last line without one. */
export function lineEnd(buf: Uint8Array, p: number, end: number): number {
  const nl = (buf as Buffer).indexOf(10, p);
  return nl < 0 || nl >= end ? end : nl;
}

/** What `decodeLine` returns for a line it reported as empty or not JSON. */
export const UNDECODED: unique symbol = Symbol('undecoded line');

/** The value of line `buf[s, e)` through `parse`; an empty or unparsable line is reported to `bad` and gives `UNDECODED`. */
export function decodeLine(buf: Uint8Array, s: number, e: number, line: number, bad: BadLine, parse: (text: string) => unknown): unknown {
  const text = utf8Slice(buf, s, e);
  try {
    return parse(text);
  } catch (err) {
    bad(line, text.trim() === '' ? 'empty line' : `not JSON: ${(err as Error).message}`);
    return UNDECODED;
  }
}
