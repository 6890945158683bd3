// JSON bodies: typed arrays as arrays, bigints as numbers, non-finite floats as null, in every answer.
import type { Context } from 'hono';

/**
 * The value with typed arrays turned into arrays and bigints into numbers, copying only the containers on
 * the way to such a value (query results may be cached: they are never changed). Everything else is left to
 * JSON.stringify, which writes NaN and ±Infinity as null itself — far faster than a replacer called per value.
 */
function wireValue(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value === null || typeof value !== 'object') return value;
  if (ArrayBuffer.isView(value)) {
    if (value instanceof DataView) return value;
    return value instanceof BigInt64Array || value instanceof BigUint64Array ? Array.from(value, Number) : Array.from(value as unknown as ArrayLike<number>);
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (v === null || (typeof v !== 'object' && typeof v !== 'bigint')) continue;
      const w = wireValue(v);
      if (w !== v) (copy ??= value.slice())[i] = w;
    }
    return copy ?? value;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  let copy: Record<string, unknown> | null = null;
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v === null || (typeof v !== 'object' && typeof v !== 'bigint')) continue;
    const w = wireValue(v);
    if (w !== v) (copy ??= { ...(value as Record<string, unknown>) })[key] = w;
  }
  return copy ?? value;
}

/** Serializes a query result for the wire. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(wireValue(value)) ?? 'null';
}

/** Arrays longer than this, and typed arrays, are written piece by piece. */
const LONG_ARRAY = 1024;
/** Numbers of a typed array (or light elements of a long array) turned into text at a time. */
const NUMBERS_PER_PIECE = 8192;
/** Bytes of text handed to the response at a time. */
const STREAM_CHUNK = 1 << 16;

const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
};

/** Whether `v` holds a typed array or a long array within a few levels (only such answers are worth streaming). */
function heavy(v: unknown, depth = 3): boolean {
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return true;
  if (Array.isArray(v)) return v.length > LONG_ARRAY;
  if (depth === 0 || !isPlainObject(v)) return false;
  for (const key of Object.keys(v)) if (heavy(v[key], depth - 1)) return true;
  return false;
}

/** A run of a typed array's numbers. */
type Numbers = ArrayLike<number> & { join(separator: string): string };

/**
 * The JSON text of a run of typed-array numbers, without its brackets: joined as they are when every one is
 * finite (a number's text is the same either way, without an array of them made first), else through
 * JSON.stringify (which writes NaN and ±Infinity as null).
 */
function numbersText(part: Numbers, float: boolean): string {
  if (float) {
    for (let i = 0; i < part.length; i++) {
      const v = part[i];
      if (v - v !== 0) return JSON.stringify(Array.from(part)).slice(1, -1);
    }
  }
  return part.join(',');
}

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
const unwritable = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/**
 * The JSON text of `value` in pieces, exactly as `toJsonText` writes it: typed arrays and runs of light
 * elements of long arrays a few thousand at a time, heavy elements piece by piece, so a large answer is
 * never one string (or one array of numbers) in memory.
 */
export function* jsonPieces(value: unknown): Generator<string> {
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const n = (value as unknown as ArrayLike<unknown>).length;
    const big = value instanceof BigInt64Array || value instanceof BigUint64Array;
    const float = value instanceof Float64Array || value instanceof Float32Array;
    yield '[';
    for (let i = 0; i < n; i += NUMBERS_PER_PIECE) {
      const part = (value as unknown as { subarray(a: number, b: number): Numbers | ArrayLike<bigint> }).subarray(i, Math.min(n, i + NUMBERS_PER_PIECE));
      const text = big ? JSON.stringify(Array.from(part as ArrayLike<bigint>, Number)).slice(1, -1) : numbersText(part as Numbers, float);
      yield (i > 0 ? ',' : '') + text;
    }
    yield ']';
    return;
  }
  if (Array.isArray(value) && value.length > LONG_ARRAY) {
    // runs of light elements go out a slice at a time (one stringify each), heavy ones piece by piece
    yield '[';
    let from = 0;
    const flush = function* (to: number): Generator<string> {
      if (to > from) yield (from > 0 ? ',' : '') + toJsonText(value.slice(from, to)).slice(1, -1);
      from = to;
    };
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      // a number, string or null (most elements of a long array) is light without a call per element
      if (v === null || typeof v !== 'object' || !heavy(v)) {
        if (i + 1 - from >= NUMBERS_PER_PIECE) yield* flush(i + 1);
        continue;
      }
      yield* flush(i);
      if (i > 0) yield ',';
      yield* jsonPieces(v);
      from = i + 1;
    }
    yield* flush(value.length);
    yield ']';
    return;
  }
  if (isPlainObject(value) && heavy(value)) {
    yield '{';
    let first = true;
    for (const key of Object.keys(value)) {
      const v = value[key];
      if (unwritable(v)) continue;
      yield `${first ? '' : ','}${JSON.stringify(key)}:`;
      first = false;
      yield* heavy(v) ? jsonPieces(v) : [toJsonText(v)];
    }
    yield '}';
    return;
  }
  yield toJsonText(value);
}

/**
 * The JSON text of `value` as UTF-8 chunks of about STREAM_CHUNK bytes: its pieces joined in their order,
 * never a string grown piece by piece (a rope to flatten).
 */
export function* jsonChunks(value: unknown): Generator<Uint8Array> {
  let parts: string[] = [];
  let length = 0;
  for (const piece of jsonPieces(value)) {
    parts.push(piece);
    length += piece.length;
    if (length >= STREAM_CHUNK) {
      yield Buffer.from(parts.join(''), 'utf8');
      parts = [];
      length = 0;
    }
  }
  if (length > 0) yield Buffer.from(parts.join(''), 'utf8');
}

/** The bytes of `value`'s JSON body, counted chunk by chunk (nothing kept) until `atMost` is passed. */
export function jsonByteLength(value: unknown, atMost = Infinity): number {
  let n = 0;
  for (const chunk of jsonChunks(value)) {
    n += chunk.length;
    if (n > atMost) break;
  }
  return n;
}

/** The JSON body of `value`: one string for ordinary answers, a stream of chunks for large ones. */
export function jsonBody(value: unknown): string | ReadableStream<Uint8Array> {
  if (!heavy(value)) return toJsonText(value);
  const chunks = jsonChunks(value);
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
}

export function jsonResponse(c: Context, value: unknown, status: 200 | 400 | 404 | 500 | 503 = 200): Response {
  const body = jsonBody(value);
  c.status(status);
  c.header('Content-Type', 'application/json');
  return typeof body === 'string' ? c.body(body) : c.body(body);
}

/** The header a partial answer (one with `coverage`) carries: kept-answer caches never keep such a response. */
export const PARTIAL_HEADER = 'x-rlsight-coverage';

/** Marks the response partial (`done/total` hours read, or `done/total steps`) when the answer has a coverage. */
export function markPartial(c: Context, coverage: { hours_done: number; hours_total: number } | { steps_done: number; steps_total: number } | undefined): void {
  if (coverage === undefined) return;
  c.header(PARTIAL_HEADER, 'steps_done' in coverage ? `${coverage.steps_done}/${coverage.steps_total} steps` : `${coverage.hours_done}/${coverage.hours_total}`);
}

/** Warnings listed on one answer at most (the rest are counted in a last line). */
const WARNINGS_LISTED = 100;

/**
 * A run-wide answer with the damage the run reported so far (`warnings`, paths relative to the run): present
 * only when there is some, so a healthy run's answers are exactly the reference's.
 */
export function withWarnings<T extends object>(body: T, warnings: readonly string[], scrub: (m: string) => string): T & { warnings?: string[] } {
  if (warnings.length === 0) return body;
  const listed = warnings.slice(0, WARNINGS_LISTED).map(scrub);
  if (warnings.length > WARNINGS_LISTED) listed.push(`… and ${warnings.length - WARNINGS_LISTED} more`);
  return { ...body, warnings: listed };
}
