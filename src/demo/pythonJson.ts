// JSON text as Python's json.dumps writes it, which is what miles' writers put on disk.

/** A float as Python's `repr` prints it: `1.0`, `0.30000000000000004`, `1e-07`, `nan` is not JSON so never passed. */
export function pyFloat(x: number): string {
  if (Number.isInteger(x) && x < 1e16 && x > -1e16 && x !== 0) return `${x}.0`;
  if (!Number.isFinite(x)) throw new RangeError(`non-finite float ${x} has no JSON form`);
  const a = Math.abs(x);
  // Python's repr is positional for 1e-4 <= |x| < 1e16 and scientific outside; JS switches at 1e-6 and 1e21.
  if (a !== 0 && (a < 1e-4 || a >= 1e16)) {
    const s = x.toExponential();
    const e = s.indexOf('e');
    const sign = s[e + 1] === '-' ? '-' : '+';
    return `${s.slice(0, e)}e${sign}${s.slice(e + 2).padStart(2, '0')}`;
  }
  if (Number.isInteger(x)) return Object.is(x, -0) ? '-0.0' : `${x}.0`;
  return String(x);
}

/** Marks a number that Python holds as a float (so `2` is written `2.0`). */
export class PyFloat {
  constructor(readonly value: number) {}
}

export type PyJson = null | boolean | number | string | PyFloat | PyJson[] | { [key: string]: PyJson };

interface DumpStyle {
  indent?: number;
  /** Python's default separators are `", "` and `": "`; miles' streams use `","` and `":"`. */
  compact?: boolean;
}

/** `json.dumps(value)` (default separators), `indent=N`, or `separators=(",", ":")` with `compact`. */
export function pyDumps(value: PyJson, style: DumpStyle = {}): string {
  const item = style.compact ? ',' : ', ';
  const key = style.compact ? ':' : ': ';
  const walk = (v: PyJson, depth: number): string => {
    if (v === null) return 'null';
    if (v instanceof PyFloat) return pyFloat(v.value);
    if (typeof v === 'number') return Number.isInteger(v) ? String(v) : pyFloat(v);
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (typeof v === 'string') return pyString(v);
    const entries: string[] = Array.isArray(v)
      ? v.map((x) => walk(x, depth + 1))
      : Object.entries(v).map(([k, x]) => pyString(k) + key + walk(x, depth + 1));
    const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
    if (entries.length === 0) return open + close;
    if (style.indent === undefined) return open + entries.join(item) + close;
    const pad = '\n' + ' '.repeat(style.indent * (depth + 1));
    return open + pad + entries.join(',' + pad) + '\n' + ' '.repeat(style.indent * depth) + close;
  };
  return walk(value, 0);
}

/** Python escapes every non-ASCII character (ensure_ascii=True). */
export function pyString(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}
