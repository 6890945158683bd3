// Compares a decoded torch value with the fixtures' `decoded/<path>.pt.json` rendering of what torch.load returned.
import { readTensor } from '../../src/formats/torch/tensorData.ts';
import { PyEnum, PyObject, PyTuple, Storage, Tensor, type PyValue } from '../../src/formats/torch/value.ts';

export interface MatchOptions {
  /** Relative float tolerance; 0 (the default) means bit-exact doubles. */
  tol?: number;
}

/**
 * Checks `value` against a decoded-JSON rendering, value by value (tensors: dtype, shape, stride,
 * storage_offset, requires_grad and every element). Returns the first difference as
 * `path: problem`, or null when they match. Conventions: `__tensor__`, `__tuple__`, `__enum__`,
 * `__dict__` (non-string keys or dict subclasses, as ordered `items`), `__object__`, `__float__`.
 * JSON ints beyond 2^53 lost precision when parsed, so bigints are compared after rounding to double.
 */
export async function matchesDecoded(value: unknown, decoded: unknown, opts: MatchOptions = {}, path = '$'): Promise<string | null> {
  const tol = opts.tol ?? 0;
  if (decoded === null) return value === null ? null : `${path}: expected None, got ${show(value)}`;
  if (typeof decoded === 'boolean') return value === decoded ? null : `${path}: expected ${decoded}, got ${show(value)}`;
  if (typeof decoded === 'string') return value === decoded ? null : `${path}: expected ${JSON.stringify(decoded)}, got ${show(value)}`;
  if (typeof decoded === 'number') return numberDiff(value, decoded, tol, path);
  if (Array.isArray(decoded)) {
    // Typed lists (decoded with `typedLists`) stand for Python lists of numbers.
    if (value instanceof Int32Array || value instanceof Float64Array) return seqDiff([...value], decoded, opts, path);
    if (!Array.isArray(value) || value instanceof PyTuple) return `${path}: expected a list, got ${show(value)}`;
    return seqDiff(value, decoded, opts, path);
  }
  const d = decoded as Record<string, unknown>;
  if ('__float__' in d) {
    const want = d.__float__ === 'nan' ? NaN : d.__float__ === 'inf' ? Infinity : d.__float__ === '-inf' ? -Infinity : Number(d.__float__);
    return numberDiff(value, want, tol, path);
  }
  if ('__tuple__' in d) {
    if (!(value instanceof PyTuple)) return `${path}: expected a tuple, got ${show(value)}`;
    return seqDiff(value, d.__tuple__ as unknown[], opts, path);
  }
  if ('__tensor__' in d || '__ndarray__' in d) return tensorDiff(value, d, opts, path);
  if ('__enum__' in d) {
    if (!(value instanceof PyEnum)) return `${path}: expected enum ${d.__enum__}, got ${show(value)}`;
    if (`${value.module}.${value.name}` !== d.__enum__) return `${path}: enum class ${value.module}.${value.name} != ${d.__enum__}`;
    if (value.member !== undefined && 'name' in d && value.member !== d.name) return `${path}: enum member ${value.member} != ${d.name}`;
    if (value.value !== undefined && 'value' in d) return matchesDecoded(value.value, d.value, opts, `${path}.value`);
    return null;
  }
  if ('__dict__' in d) {
    const items = (d.items as [unknown, unknown][]) ?? [];
    let entries: [unknown, unknown][];
    if (value instanceof Map) entries = [...value.entries()];
    else if (value instanceof PyObject && value.items && `${value.module}.${value.name}` === d.__dict__) entries = [...value.items.entries()];
    else if (isPlainObject(value)) entries = Object.entries(value);
    else return `${path}: expected dict ${d.__dict__}, got ${show(value)}`;
    if (entries.length !== items.length) return `${path}: ${entries.length} items != ${items.length}`;
    // Ordered comparison, except that plain objects reorder integer-like keys: match those by key.
    for (let i = 0; i < items.length; i++) {
      const [k, v] = items[i];
      const hit = entries.findIndex(([ak], j) => (value instanceof Map ? j === i : true) && sameKey(ak, k));
      if (hit < 0) return `${path}: key ${JSON.stringify(k)} missing or out of order`;
      const diff = await matchesDecoded(entries[hit][1], v, opts, `${path}[${JSON.stringify(k)}]`);
      if (diff) return diff;
    }
    return null;
  }
  if ('__object__' in d) {
    if (!(value instanceof PyObject)) return `${path}: expected object ${d.__object__}, got ${show(value)}`;
    if (`${value.module}.${value.name}` !== d.__object__) return `${path}: object class ${value.module}.${value.name} != ${d.__object__}`;
    const { __object__: _cls, ...attrs } = d;
    const state = Array.isArray(value.state) ? { ...(value.state[0] ?? {}), ...(value.state[1] ?? {}) } : (value.state ?? {});
    return matchesDecoded(state, attrs, opts, path);
  }
  const marker = Object.keys(d).find((k) => /^__\w+__$/.test(k));
  if (marker) return `${path}: unsupported decoded marker ${marker}`;
  if (!isPlainObject(value)) return `${path}: expected a dict, got ${show(value)}`;
  const ek = Object.keys(d).sort();
  const ak = Object.keys(value).sort();
  if (ek.join('\u0000') !== ak.join('\u0000')) return `${path}: keys [${ak}] != [${ek}]`;
  for (const k of ek) {
    const diff = await matchesDecoded(value[k], d[k], opts, `${path}.${k}`);
    if (diff) return diff;
  }
  return null;
}

async function seqDiff(value: unknown[], decoded: unknown[], opts: MatchOptions, path: string): Promise<string | null> {
  if (value.length !== decoded.length) return `${path}: length ${value.length} != ${decoded.length}`;
  for (let i = 0; i < decoded.length; i++) {
    const diff = await matchesDecoded(value[i], decoded[i], opts, `${path}[${i}]`);
    if (diff) return diff;
  }
  return null;
}

async function tensorDiff(value: unknown, d: Record<string, unknown>, opts: MatchOptions, path: string): Promise<string | null> {
  if (!(value instanceof Tensor)) return `${path}: expected a tensor, got ${show(value)}`;
  if (value.dtype !== d.dtype) return `${path}: dtype ${value.dtype} != ${d.dtype}`;
  if (JSON.stringify(value.shape) !== JSON.stringify(d.shape)) return `${path}: shape [${value.shape}] != [${d.shape}]`;
  if (d.stride !== undefined && JSON.stringify(value.stride) !== JSON.stringify(d.stride)) return `${path}: stride [${value.stride}] != [${d.stride}]`;
  if (d.storage_offset !== undefined && value.storageOffset !== d.storage_offset) return `${path}: storage_offset ${value.storageOffset} != ${d.storage_offset}`;
  if (d.requires_grad !== undefined && value.requiresGrad !== d.requires_grad) return `${path}: requires_grad ${value.requiresGrad} != ${d.requires_grad}`;
  const data = await readTensor(value);
  const want = flatten(d.data);
  if (data.length !== want.length) return `${path}: ${data.length} elements != ${want.length}`;
  for (let i = 0; i < want.length; i++) {
    let got: unknown = data[i];
    if (value.dtype === 'bool') got = data[i] !== 0;
    const diff = await matchesDecoded(got, want[i], opts, `${path}.data[${i}]`);
    if (diff) return diff;
  }
  return null;
}

function flatten(v: unknown): unknown[] {
  if (!Array.isArray(v)) return [v];
  const out: unknown[] = [];
  const walk = (x: unknown): void => {
    if (Array.isArray(x)) for (const y of x) walk(y);
    else out.push(x);
  };
  walk(v);
  return out;
}

function numberDiff(value: unknown, want: number, tol: number, path: string): string | null {
  let got: number;
  if (typeof value === 'number') got = value;
  else if (typeof value === 'bigint') got = Number(value);
  else return `${path}: expected ${want}, got ${show(value)}`;
  if (Object.is(got, want)) return null;
  if (tol > 0 && Math.abs(got - want) <= tol * Math.max(1, Math.abs(want))) return null;
  return `${path}: ${got} != ${want}`;
}

function sameKey(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'bigint' && typeof b === 'number') return Number(a) === b;
  if (a instanceof PyTuple && b && typeof b === 'object' && '__tuple__' in b) {
    const t = (b as { __tuple__: unknown[] }).__tuple__;
    return a.length === t.length && a.every((x, i) => sameKey(x, t[i]));
  }
  return false;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

function show(v: unknown): string {
  if (v instanceof Tensor) return `tensor(${v.dtype}, [${v.shape}])`;
  if (v instanceof Storage) return `storage(${v.dtype}, ${v.numel})`;
  if (v instanceof PyObject) return `${v.module}.${v.name}(…)`;
  if (v instanceof PyTuple) return 'a tuple';
  if (v instanceof Map) return 'a Map';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'bigint') return `${v}n`;
  try {
    return JSON.stringify(v)?.slice(0, 60) ?? String(v);
  } catch {
    return String(v);
  }
}

export type { PyValue };
