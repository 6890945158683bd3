// JSON bodies: typed arrays as arrays, bigints as numbers, non-finite floats as null, in every answer.
import type { Context } from 'hono';

function replacer(_key: string, value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'bigint') return Number(value);
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) return Array.from(value as unknown as ArrayLike<unknown>);
  return value;
}

/** Serializes a query result for the wire. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, replacer) ?? 'null';
}

export function jsonResponse(c: Context, value: unknown, status: 200 | 400 | 404 | 500 | 503 = 200): Response {
  return c.body(toJsonText(value), status, { 'Content-Type': 'application/json' });
}
