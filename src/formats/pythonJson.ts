// JSON text as Python's json.dumps writes and reads it, which is what miles' writers put on disk:
// floats in `repr` form (`2.0`, `1e-06`), bare `NaN`/`Infinity` for non-finite floats, ASCII only.
import { PyFloat } from './torch/writer.ts';
import { pyRepr } from './pythonFormat.ts';

/** A float as `json.dumps` prints it: `repr`, except `NaN`, `Infinity` and `-Infinity` (allow_nan=True). */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
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

/**
 * `json.dumps(value)` (default separators), `indent=N`, or `separators=(",", ":")` with `compact`.
 * A plain number is an int when integral and a float otherwise; `PyFloat` forces a float.
 */
export function pyDumps(value: PyJson, style: DumpStyle = {}): string {
  const item = style.compact ? ',' : ', ';
  const key = style.compact ? ':' : ': ';
  const walk = (v: PyJson, depth: number): string => {
    if (v === null) return 'null';
    if (v instanceof PyFloat) return pyFloat(v.value);
    // (Python has no integer -0: a -0 was a float, -0.0)
    if (typeof v === 'number') return Number.isInteger(v) && !Object.is(v, -0) ? String(v) : pyFloat(v);
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

const PLAIN_ASCII = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/;

/** Python escapes every non-ASCII character (ensure_ascii=True). */
export function pyString(s: string): string {
  if (PLAIN_ASCII.test(s)) return `"${s}"`;
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** Why a text is not Python JSON, with the character offset. */
export class PyJsonError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`${message} at character ${offset}`);
  }
}

/**
 * Parses the JSON Python's `json` module reads: standard JSON plus bare `NaN`, `Infinity`, `-Infinity`.
 * With `keepFloats`, an integral number written as a float (`95.0`, `1e3`) comes back as a `PyFloat`
 * so re-encoding gives the same text; other numbers are plain (their form is unambiguous).
 */
export function parsePyJson(text: string, keepFloats = false): PyJson {
  if (!keepFloats) {
    try {
      return JSON.parse(text) as PyJson;
    } catch {
      // NaN/Infinity, or a real error: the full parser below says which and where
    }
  }
  const p = new PyJsonParser(text, keepFloats);
  p.space();
  const v = p.value(0);
  p.space();
  if (p.at < text.length) throw new PyJsonError('unexpected text after the value', p.at);
  return v;
}

const MAX_DEPTH = 64;

class PyJsonParser {
  at = 0;
  constructor(
    private readonly s: string,
    private readonly keepFloats: boolean,
  ) {}

  space(): void {
    const s = this.s;
    while (this.at < s.length) {
      const c = s.charCodeAt(this.at);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.at++;
      else break;
    }
  }

  value(depth: number): PyJson {
    if (depth > MAX_DEPTH) throw new PyJsonError(`nested deeper than ${MAX_DEPTH}`, this.at);
    const s = this.s;
    const c = s[this.at];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return this.string();
    if (s.startsWith('true', this.at)) return this.word(4, true);
    if (s.startsWith('false', this.at)) return this.word(5, false);
    if (s.startsWith('null', this.at)) return this.word(4, null);
    if (s.startsWith('NaN', this.at)) return this.word(3, this.float(NaN));
    if (s.startsWith('Infinity', this.at)) return this.word(8, this.float(Infinity));
    if (s.startsWith('-Infinity', this.at)) return this.word(9, this.float(-Infinity));
    return this.number();
  }

  private float(x: number): PyJson {
    return this.keepFloats && !Number.isFinite(x) ? new PyFloat(x) : x;
  }

  private word<T extends PyJson>(n: number, v: T): T {
    this.at += n;
    return v;
  }

  private object(depth: number): PyJson {
    const out: { [key: string]: PyJson } = {};
    this.at++;
    this.space();
    if (this.s[this.at] === '}') {
      this.at++;
      return out;
    }
    for (;;) {
      this.space();
      if (this.s[this.at] !== '"') throw new PyJsonError('expected a quoted key', this.at);
      const k = this.string();
      this.space();
      if (this.s[this.at] !== ':') throw new PyJsonError("expected ':'", this.at);
      this.at++;
      this.space();
      // defineProperty: a key named __proto__ stays an own key, as in JSON.parse
      Object.defineProperty(out, k, { value: this.value(depth + 1), enumerable: true, writable: true, configurable: true });
      this.space();
      const c = this.s[this.at++];
      if (c === '}') return out;
      if (c !== ',') throw new PyJsonError("expected ',' or '}'", this.at - 1);
    }
  }

  private array(depth: number): PyJson {
    const out: PyJson[] = [];
    this.at++;
    this.space();
    if (this.s[this.at] === ']') {
      this.at++;
      return out;
    }
    for (;;) {
      this.space();
      out.push(this.value(depth + 1));
      this.space();
      const c = this.s[this.at++];
      if (c === ']') return out;
      if (c !== ',') throw new PyJsonError("expected ',' or ']'", this.at - 1);
    }
  }

  private string(): string {
    const s = this.s;
    const start = this.at;
    let i = start + 1;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 34) break;
      if (c === 92) i++;
      else if (c < 32) throw new PyJsonError('control character in a string', i);
    }
    if (i >= s.length) throw new PyJsonError('unterminated string', start);
    this.at = i + 1;
    try {
      return JSON.parse(s.slice(start, i + 1)) as string;
    } catch {
      throw new PyJsonError('bad escape in a string', start);
    }
  }

  private number(): PyJson {
    const m = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
    m.lastIndex = this.at;
    const r = m.exec(this.s);
    if (r === null) throw new PyJsonError('expected a value', this.at);
    this.at += r[0].length;
    const x = Number(r[0]);
    return this.keepFloats && (r[1] !== undefined || r[2] !== undefined) && Number.isInteger(x) ? new PyFloat(x) : x;
  }
}
