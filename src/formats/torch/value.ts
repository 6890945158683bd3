// The values a torch pickle decodes to. Shared by the unpickler, the writer and every reader of dumps.

export type DType =
  | 'float64'
  | 'float32'
  | 'float16'
  | 'bfloat16'
  | 'int64'
  | 'int32'
  | 'int16'
  | 'int8'
  | 'uint8'
  | 'bool';

/** Row-major element data of a tensor: f16/bf16 widened to Float32Array, bool as Uint8Array, int64 as BigInt64Array. */
export type TensorData = Float64Array | Float32Array | BigInt64Array | Int32Array | Int16Array | Int8Array | Uint8Array;

export const DTYPE_BYTES: Record<DType, number> = {
  float64: 8,
  float32: 4,
  float16: 2,
  bfloat16: 2,
  int64: 8,
  int32: 4,
  int16: 2,
  int8: 1,
  uint8: 1,
  bool: 1,
};

/**
 * One storage of a torch archive (`<root>/data/<key>`). Its bytes are read only when a tensor
 * over it is read, and kept until the storage itself is dropped.
 */
export class Storage {
  private cached: Promise<Uint8Array> | undefined;

  constructor(
    readonly key: string,
    readonly dtype: DType,
    readonly numel: number,
    private readonly load: () => Promise<Uint8Array>,
    /** The file it lives in, for error messages. */
    readonly source = '',
  ) {}

  /** A storage over bytes already in memory (writer, tests). */
  static fromBytes(key: string, dtype: DType, bytes: Uint8Array): Storage {
    return new Storage(key, dtype, bytes.byteLength / DTYPE_BYTES[dtype], () => Promise.resolve(bytes));
  }

  get loaded(): boolean {
    return this.cached !== undefined;
  }

  bytes(): Promise<Uint8Array> {
    this.cached ??= this.load();
    return this.cached;
  }
}

/** Forces a Python float for a number that is integral (JS cannot tell `1.0` from `1`). */
export class PyFloat {
  constructor(readonly value: number) {}
}

/**
 * A numpy scalar as numpy typed it (only when decoding with `keepNumpyScalars`). Python code that asks
 * `isinstance(x, (int, float))` accepts only `float64` among them (numpy's one Python-float subclass).
 */
export class NumpyScalar {
  constructor(
    readonly dtype: DType,
    readonly value: number | bigint | boolean,
  ) {}
}

/** A Python tuple: an Array that remembers it was a tuple (so the writer can write it back as one). */
export class PyTuple<T = unknown> extends Array<T> {
  static of<T>(...items: T[]): PyTuple<T> {
    const t = new PyTuple<T>();
    t.push(...items);
    return t;
  }
}

/**
 * Whether `v` is a PyTuple. Hot paths use this rather than `instanceof PyTuple`: the tsx/esbuild keepNames
 * transform redefines the class's `name`, after which V8 never optimizes functions that do that instanceof.
 */
export function isPyTuple(v: unknown): boolean {
  return Array.isArray(v) && Object.getPrototypeOf(v) === PyTuple.prototype;
}

/**
 * An instance of a global that is not on the allowlist: recorded, never constructed. `args` is the
 * call's arguments, or null for a bare reference to the global itself (a class or function named in
 * the pickle but not called); `state` is what BUILD gave it. Items a pickle stored into it with
 * SETITEM(S) or APPEND(S) (dict or list subclasses) land in `items` / `listItems`.
 */
export class PyObject {
  items?: Map<PyValue, PyValue>;
  listItems?: PyValue[];
  /** Made by `cls.__new__(cls, *args)` (NEWOBJ) rather than called as `cls(*args)` (REDUCE). */
  newobj?: boolean;
  constructor(
    readonly module: string,
    readonly name: string,
    public args: unknown[] | null = null,
    public state: unknown = undefined,
  ) {}
}

/**
 * An enum member as pickled by `module.Class(value)` (Python's Enum reduce), or by
 * `getattr(module.Class, 'MEMBER')` (then `member` is set and `value` is unknown). `name` is the
 * class's qualified name. A pickle cannot say a class is an Enum, so any one-scalar-argument call of
 * an unknown class lands here; BUILD state given to it is kept in `state`.
 */
export class PyEnum {
  state?: unknown;
  constructor(
    readonly module: string,
    readonly name: string,
    readonly value: unknown,
    readonly member?: string,
  ) {}
}

export class Tensor {
  constructor(
    readonly dtype: DType,
    readonly shape: number[],
    readonly stride: number[],
    readonly storageOffset: number,
    readonly storage: Storage,
    readonly requiresGrad = false,
  ) {}

  get numel(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }
}

/**
 * A decoded pickle value. Python ints outside the safe integer range come back as bigint; dicts with
 * only string keys are plain objects, other dicts and OrderedDicts are Maps; a bare torch storage (not
 * wrapped in a tensor) is a Storage.
 */
export type PyValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | PyValue[]
  | PyTuple<PyValue>
  | Set<PyValue>
  | Map<PyValue, PyValue>
  | { [key: string]: PyValue }
  | Tensor
  | Storage
  | PyObject
  | PyEnum
  /** Only when decoding with `boxIntegralFloats`: a float whose value is integral. */
  | PyFloat
  /** Only when decoding with `keepNumpyScalars`: a numpy scalar with its dtype. */
  | NumpyScalar
  /** Only when decoding with `typedLists`: a list of numbers. */
  | Int32Array
  | Float64Array;
