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
