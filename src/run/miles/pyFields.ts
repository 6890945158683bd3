// Typed access to fields of decoded pickle values (dicts arrive as plain objects or Maps).
import { PyEnum, PyObject, Tensor, type PyValue } from '../../formats/torch/value.ts';

export type PyDict = { [key: string]: PyValue } | Map<PyValue, PyValue>;

export function isDict(v: unknown): v is PyDict {
  if (v instanceof Map) return true;
  return (
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    !(v instanceof Tensor) &&
    !(v instanceof PyObject) &&
    !(v instanceof PyEnum) &&
    !(v instanceof Set) &&
    !ArrayBuffer.isView(v)
  );
}

/** `d[key]`, or undefined when the key is absent (or `d` is not a dict). */
export function field(d: unknown, key: string): PyValue | undefined {
  if (d instanceof Map) return d.get(key) as PyValue | undefined;
  if (isDict(d)) return Object.prototype.hasOwnProperty.call(d, key) ? (d as Record<string, PyValue>)[key] : undefined;
  return undefined;
}

export function isList(v: unknown): v is PyValue[] {
  return Array.isArray(v);
}

/** A Python int/bool/float as a JS number (bool → 0/1, bigint widened); null for anything else. */
export function asNumber(v: unknown): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  return null;
}

/** A Python int (or integral float) as a JS number; null otherwise. */
export function asInt(v: unknown): number | null {
  const n = asNumber(v);
  return n !== null && Number.isInteger(n) ? n : null;
}

export function asString(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** The value of an enum member or its plain string form (`Sample.Status` pickles either way). */
export function enumText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v instanceof PyEnum) return typeof v.value === 'string' ? v.value : String(v.value);
  return null;
}

/** A pickled reward as one number: a bool as 1/0, an int widened; anything else (a dict of rewards, None) is null. */
export function scalarReward(v: PyValue | undefined): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  return null;
}
