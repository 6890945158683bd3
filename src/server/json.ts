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

export function jsonResponse(c: Context, value: unknown, status: 200 | 400 | 404 | 500 | 503 = 200): Response {
  return c.body(toJsonText(value), status, { 'Content-Type': 'application/json' });
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
