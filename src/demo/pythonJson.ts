// JSON text as Python's json.dumps writes it, which is what miles' writers put on disk.
import { PyFloat } from '../formats/torch/writer.ts';
import { pyRepr } from '../queries/pythonFormat.ts';

/** A float as Python's `repr` prints it; `nan` and `inf` are not JSON, so they are refused. */
export function pyFloat(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`non-finite float ${x} has no JSON form`);
  return pyRepr(x);
}

/** Marks a number that Python holds as a float (so `2` is written `2.0`): the torch writer's marker. */
export { PyFloat };

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
