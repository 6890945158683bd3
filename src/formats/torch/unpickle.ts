// A pickle VM for what torch.save and Python write (protocols 0–5). Globals outside an explicit
// allowlist become inert PyObject records: decoding a pickle never runs anything.
import { PickleError } from './errors.ts';
import { DTYPE_BYTES, isPyTuple, NumpyScalar, PyEnum, PyFloat, PyObject, PyTuple, Storage, Tensor, type DType, type PyValue } from './value.ts';

export interface UnpickleOptions {
  /** Named in every error. */
  file: string;
  /**
   * The globals (`module.name`) the file may name; any other is refused at its first mention with a
   * PickleError naming it (nothing is ever executed either way). Default: every global, recorded inertly.
   */
  allowGlobal?: (name: string) => boolean;
  /** Resolves a persistent id (BINPERSID/PERSID); torch uses them for storages. Default: inert record. */
  persistentLoad?: (pid: PyValue) => PyValue;
  /**
   * Decode lists made only of int32-range ints as Int32Array, and of ints and floats as Float64Array
   * (int/float distinction lost), instead of plain arrays: less memory and far less GC for rollout
   * token/log-prob lists. Off by default.
   */
  typedLists?: boolean;
  /**
   * Box floats with integral values (`2.0`) as PyFloat, so a writer can reproduce Python's text for
   * them (JS numbers cannot tell `2.0` from `2`). Off by default; ignored for typed lists.
   */
  boxIntegralFloats?: boolean;
  /**
   * Keep numpy scalars (`np.float32(1.5)`, `np.int64(3)`) as NumpyScalar with their dtype instead of
   * plain numbers, for readers that must apply Python's type rules to them. Off by default.
   */
  keepNumpyScalars?: boolean;
  /**
   * With `typedLists`: a number list that is the value of a dict key named here (`{'tokens': [...]}`) is
   * scanned but not kept: it decodes as a zero-filled typed array of its length (views of one shared
   * buffer), for readers that need only the length of such lists. Other lists decode as usual.
   */
  lengthOnlyUnder?: ReadonlySet<string>;
  /**
   * A string longer than UNREAD_TEXT_ABOVE bytes that is the value of a dict key named here (`{'response':
   * '...'}`) is skipped, not decoded: it decodes as the empty string, for readers that never look at such
   * text (decoding a string never fails, so skipping one hides no damage).
   */
  unreadTextUnder?: ReadonlySet<string>;
}

/** Strings up to this many bytes are always decoded (see UnpickleOptions.unreadTextUnder). */
export const UNREAD_TEXT_ABOVE = 256;

export interface PickleResult {
  value: PyValue;
  /** The PROTO opcode's protocol (0 or 1 when absent). */
  protocol: number;
  /** `module.name` of every global the pickle names, in order of first appearance. */
  globals: string[];
  /** Names of the opcodes that occur, sorted. */
  opcodes: string[];
}

/** The stack of an unfinished decode and the stack positions its open MARKs recorded. */
export interface PendingPickle {
  readonly stack: readonly PyValue[];
  readonly marks: readonly number[];
}

/**
 * The items of a list being decoded that are certainly complete: those appended already, and those pushed
 * above its open MARK except the last (it may still be filling). `listAt` is the list's stack position.
 */
export function completedListItems(p: PendingPickle, listAt: number): PyValue[] {
  const list = p.stack[listAt];
  if (!Array.isArray(list)) return [];
  const k = p.marks.indexOf(listAt + 1);
  if (k < 0) return list;
  const frameEnd = k + 1 < p.marks.length ? p.marks[k + 1] : p.stack.length;
  return [...list, ...p.stack.slice(listAt + 1, Math.max(listAt + 1, frameEnd - 1))];
}

/** A synchronous random-access byte source, for pickles too large for one buffer. */
export interface PickleSource {
  size: number;
  read(position: number, into: Uint8Array, offset: number, length: number): number;
}

/** A reference to a module-level name found by GLOBAL/STACK_GLOBAL; allowlisted ones carry a handler. */
export class GlobalRef extends PyObject {
  constructor(
    module: string,
    name: string,
    readonly call?: (args: PyValue[], u: Unpickler) => PyValue,
  ) {
    super(module, name, null);
  }
}

/** A numpy dtype under construction (`numpy.dtype(descr)` + BUILD byte order). Inert when it leaks out. */
export class NumpyDType extends PyObject {
  byteorder = '=';
  /** The type code without a byte-order prefix (`f4`, `i8`, `b1`, …). */
  readonly descr: string;
  constructor(descr: string) {
    super('numpy', 'dtype', [descr]);
    const m = /^([<>|=!])(.*)$/.exec(descr);
    this.descr = m ? m[2] : descr;
    if (m) this.byteorder = m[1] === '!' ? '>' : m[1];
  }
}

/** `numpy…_reconstruct(ndarray, …)` awaiting its BUILD; replaced by a Tensor where the dtype allows. */
class NdArrayPending extends PyObject {
  memoSlots: number[] = [];
  constructor() {
    super('numpy', 'ndarray', []);
  }
}

const OPNAMES: Record<number, string> = {
  0x28: 'MARK', 0x2e: 'STOP', 0x30: 'POP', 0x31: 'POP_MARK', 0x32: 'DUP', 0x46: 'FLOAT', 0x49: 'INT',
  0x4a: 'BININT', 0x4b: 'BININT1', 0x4c: 'LONG', 0x4d: 'BININT2', 0x4e: 'NONE', 0x50: 'PERSID',
  0x51: 'BINPERSID', 0x52: 'REDUCE', 0x53: 'STRING', 0x54: 'BINSTRING', 0x55: 'SHORT_BINSTRING',
  0x56: 'UNICODE', 0x58: 'BINUNICODE', 0x61: 'APPEND', 0x62: 'BUILD', 0x63: 'GLOBAL', 0x64: 'DICT',
  0x7d: 'EMPTY_DICT', 0x65: 'APPENDS', 0x67: 'GET', 0x68: 'BINGET', 0x69: 'INST', 0x6a: 'LONG_BINGET',
  0x6c: 'LIST', 0x5d: 'EMPTY_LIST', 0x6f: 'OBJ', 0x70: 'PUT', 0x71: 'BINPUT', 0x72: 'LONG_BINPUT',
  0x73: 'SETITEM', 0x74: 'TUPLE', 0x29: 'EMPTY_TUPLE', 0x75: 'SETITEMS', 0x47: 'BINFLOAT',
  0x80: 'PROTO', 0x81: 'NEWOBJ', 0x82: 'EXT1', 0x83: 'EXT2', 0x84: 'EXT4', 0x85: 'TUPLE1', 0x86: 'TUPLE2',
  0x87: 'TUPLE3', 0x88: 'NEWTRUE', 0x89: 'NEWFALSE', 0x8a: 'LONG1', 0x8b: 'LONG4', 0x42: 'BINBYTES',
  0x43: 'SHORT_BINBYTES', 0x8c: 'SHORT_BINUNICODE', 0x8d: 'BINUNICODE8', 0x8e: 'BINBYTES8',
  0x8f: 'EMPTY_SET', 0x90: 'ADDITEMS', 0x91: 'FROZENSET', 0x92: 'NEWOBJ_EX', 0x93: 'STACK_GLOBAL',
  0x94: 'MEMOIZE', 0x95: 'FRAME', 0x96: 'BYTEARRAY8', 0x97: 'NEXT_BUFFER', 0x98: 'READONLY_BUFFER',
};

export function opcodeName(op: number): string {
  return OPNAMES[op] ?? `0x${op.toString(16).padStart(2, '0')}`;
}

const STORAGE_DTYPES: Record<string, DType> = {
  DoubleStorage: 'float64', FloatStorage: 'float32', HalfStorage: 'float16', BFloat16Storage: 'bfloat16',
  LongStorage: 'int64', IntStorage: 'int32', ShortStorage: 'int16', CharStorage: 'int8', ByteStorage: 'uint8',
  BoolStorage: 'bool', UntypedStorage: 'uint8',
};

const TORCH_DTYPES: Record<string, DType> = {
  float64: 'float64', double: 'float64', float32: 'float32', float: 'float32', float16: 'float16', half: 'float16',
  bfloat16: 'bfloat16', int64: 'int64', long: 'int64', int32: 'int32', int: 'int32', int16: 'int16', short: 'int16',
  int8: 'int8', uint8: 'uint8', bool: 'bool',
};

const NUMPY_DTYPES: Record<string, DType> = {
  f8: 'float64', f4: 'float32', f2: 'float16', i8: 'int64', i4: 'int32', i2: 'int16', i1: 'int8', u1: 'uint8', b1: 'bool',
  float64: 'float64', float32: 'float32', float16: 'float16', int64: 'int64', int32: 'int32', int16: 'int16',
  int8: 'int8', uint8: 'uint8', bool: 'bool',
};

/** The element dtype a storage class or torch dtype reference names (`torch.FloatStorage`, `torch.float32`), if any. */
export function storageDType(ref: PyValue): DType | undefined {
  if (!(ref instanceof PyObject) || ref.args !== null) return undefined;
  if (ref.module === 'torch' || ref.module === 'torch.cuda' || ref.module === 'torch.storage') {
    return STORAGE_DTYPES[ref.name] ?? (ref.module === 'torch' ? TORCH_DTYPES[ref.name] : undefined);
  }
  return undefined;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = -MAX_SAFE;
function intValue(v: bigint): number | bigint {
  return v <= MAX_SAFE && v >= MIN_SAFE ? Number(v) : v;
}

const utf8Strict = new TextDecoder('utf-8', { fatal: true });
const utf8Lenient = new TextDecoder('utf-8');

/** UTF-8 with Python's surrogatepass (lone surrogates are legal in pickled str). */
function decodeUtf8(b: Uint8Array, start: number, end: number): string {
  const n = end - start;
  if (n < 48) {
    let s = '';
    let i = start;
    for (; i < end; i++) {
      const c = b[i];
      if (c >= 0x80) break;
      s += String.fromCharCode(c);
    }
    if (i === end) return s;
  }
  try {
    return utf8Strict.decode(b.subarray(start, end));
  } catch {
    return decodeSurrogatePass(b, start, end);
  }
}

function decodeSurrogatePass(b: Uint8Array, start: number, end: number): string {
  const units: number[] = [];
  let i = start;
  while (i < end) {
    const c = b[i];
    if (c < 0x80) {
      units.push(c);
      i++;
    } else if (c >= 0xc0 && c < 0xe0 && i + 1 < end) {
      units.push(((c & 0x1f) << 6) | (b[i + 1] & 0x3f));
      i += 2;
    } else if (c >= 0xe0 && c < 0xf0 && i + 2 < end) {
      units.push(((c & 0x0f) << 12) | ((b[i + 1] & 0x3f) << 6) | (b[i + 2] & 0x3f));
      i += 3;
    } else if (c >= 0xf0 && i + 3 < end) {
      const cp = ((c & 0x07) << 18) | ((b[i + 1] & 0x3f) << 12) | ((b[i + 2] & 0x3f) << 6) | (b[i + 3] & 0x3f);
      const v = cp - 0x10000;
      units.push(0xd800 + ((v >> 10) & 0x3ff), 0xdc00 + (v & 0x3ff));
      i += 4;
    } else {
      // Not even surrogatepass-valid: fall back to replacement characters for this string.
      return utf8Lenient.decode(b.subarray(start, end));
    }
  }
  let s = '';
  for (let k = 0; k < units.length; k += 8192) s += String.fromCharCode(...units.slice(k, k + 8192));
  return s;
}

function latin1(b: Uint8Array, start: number, end: number): string {
  let s = '';
  // Short lines (GLOBAL module/name, the common case) are cheaper char by char than spread into a call.
  if (end - start <= 64) {
    for (let k = start; k < end; k++) s += String.fromCharCode(b[k]);
    return s;
  }
  for (let k = start; k < end; k += 8192) s += String.fromCharCode(...b.subarray(k, Math.min(end, k + 8192)));
  return s;
}

/** Little-endian two's complement, as LONG1/LONG4 store Python ints. */
export function decodeLong(b: Uint8Array, start: number, n: number): number | bigint {
  if (n === 0) return 0;
  if (n <= 6) {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < n; i++) {
      v += b[start + i] * mul;
      mul *= 256;
    }
    if (b[start + n - 1] & 0x80) v -= mul;
    return v;
  }
  let hex = '';
  for (let i = start + n - 1; i >= start; i--) hex += (b[i] < 16 ? '0' : '') + b[i].toString(16);
  let v = BigInt('0x' + hex);
  if (b[start + n - 1] & 0x80) v -= 1n << BigInt(8 * n);
  return intValue(v);
}

function isStringKeyed(v: unknown): v is { [key: string]: PyValue } {
  return typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function setKey(obj: { [key: string]: PyValue }, k: string, v: PyValue): void {
  if (k === '__proto__') Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
  else obj[k] = v;
}

function asInt(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : undefined;
}

function intList(v: unknown): number[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: number[] = [];
  for (const x of v) {
    const n = asInt(x);
    if (n === undefined || n < 0) return undefined;
    out.push(n);
  }
  return out;
}

function bytesOf(v: PyValue): Uint8Array | undefined {
  if (v instanceof Uint8Array) return v;
  if (typeof v === 'string') {
    // py2-era numpy pickles carry raw data as latin1 str.
    const out = new Uint8Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = v.charCodeAt(i) & 0xff;
    return out;
  }
  return undefined;
}

function byteswap(src: Uint8Array, width: number): Uint8Array {
  const out = new Uint8Array(src.length);
  for (let i = 0; i + width <= src.length; i += width) for (let k = 0; k < width; k++) out[i + k] = src[i + width - 1 - k];
  return out;
}

function contiguousStride(shape: number[]): number[] {
  const stride = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    stride[i] = s;
    s *= shape[i];
  }
  return stride;
}

type Handler = (args: PyValue[], u: Unpickler) => PyValue;

const builtinsSet: Handler = (args, u) => new Set(args.length ? u.iterable(args[0], 'set') : []);
const builtinsBytes: Handler = (args, u) => {
  if (args.length === 0) return new Uint8Array(0);
  const b = args[0] instanceof Uint8Array ? args[0] : undefined;
  if (b) return b.slice();
  if (Array.isArray(args[0])) return Uint8Array.from(args[0] as number[]);
  return u.inert('builtins', 'bytes', args);
};

/** The allowlist: `module.name` -> what calling it yields. Everything else stays inert. */
const HANDLERS: Record<string, Handler> = {
  'torch._utils._rebuild_tensor_v2': (a, u) => u.rebuildTensor(a, 'torch._utils._rebuild_tensor_v2', a[4] === true),
  'torch._utils._rebuild_tensor': (a, u) => u.rebuildTensor(a, 'torch._utils._rebuild_tensor', false),
  'torch._utils._rebuild_tensor_v3': (a, u) => u.rebuildTensor(a, 'torch._utils._rebuild_tensor_v3', a[4] === true, a[6]),
  'torch._utils._rebuild_parameter': (a, u) => u.withGrad(a, 'torch._utils._rebuild_parameter'),
  'torch._utils._rebuild_parameter_with_state': (a, u) => u.withGrad(a, 'torch._utils._rebuild_parameter_with_state'),
  'torch._tensor._rebuild_from_type_v2': (a, u) => {
    const [fn, , fnArgs] = a;
    if (fn instanceof GlobalRef && fn.call && Array.isArray(fnArgs)) return fn.call(fnArgs as PyValue[], u);
    return u.inert('torch._tensor', '_rebuild_from_type_v2', a);
  },
  'torch.Size': (a, u) => PyTuple.of(...(a.length ? u.iterable(a[0], 'torch.Size') : [])),
  'collections.OrderedDict': (a, u) => {
    const m = new Map<PyValue, PyValue>();
    if (a.length) for (const pair of u.iterable(a[0], 'OrderedDict')) if (Array.isArray(pair) && pair.length === 2) m.set(pair[0], pair[1]);
    return m;
  },
  'builtins.set': builtinsSet,
  'builtins.frozenset': builtinsSet,
  'builtins.bytes': builtinsBytes,
  'builtins.bytearray': builtinsBytes,
  'builtins.getattr': (a, u) => u.getattr(a),
  '_codecs.encode': (a, u) => {
    const [s, enc] = a;
    if (typeof s !== 'string') return u.inert('_codecs', 'encode', a);
    const e = typeof enc === 'string' ? enc.toLowerCase().replace(/[-_]/g, '') : 'utf8';
    if (e === 'latin1' || e === 'iso88591') return bytesOf(s)!;
    if (e === 'utf8') return new TextEncoder().encode(s);
    if (e === 'ascii') return bytesOf(s)!;
    return u.inert('_codecs', 'encode', a);
  },
  'copyreg._reconstructor': (a, u) => {
    const cls = a[0];
    if (cls instanceof GlobalRef) {
      const obj = u.inert(cls.module, cls.name, []);
      if (a.length > 2 && a[2] !== null) obj.state = a[2];
      return obj;
    }
    return u.inert('copyreg', '_reconstructor', a);
  },
  'numpy.dtype': (a, u) => (typeof a[0] === 'string' ? new NumpyDType(a[0]) : u.inert('numpy', 'dtype', a)),
  'numpy.core.multiarray.scalar': (a, u) => u.numpyScalar(a),
  'numpy._core.multiarray.scalar': (a, u) => u.numpyScalar(a),
  'numpy.core.numeric._frombuffer': (a, u) => u.numpyFromBuffer(a),
  'numpy._core.numeric._frombuffer': (a, u) => u.numpyFromBuffer(a),
  'numpy.core.multiarray._reconstruct': () => new NdArrayPending(),
  'numpy._core.multiarray._reconstruct': () => new NdArrayPending(),
};

/** Classes whose NEWOBJ (`cls.__new__(cls, *args)`) we construct like a call. */
const NEWOBJ_OK = new Set(['collections.OrderedDict', 'builtins.set', 'builtins.frozenset', 'builtins.bytes', 'builtins.bytearray', 'torch.Size']);

const MODULE_ALIASES: Record<string, string> = { __builtin__: 'builtins', copy_reg: 'copyreg', 'numpy.core._multiarray_umath': 'numpy.core.multiarray' };

export const DEFAULT_WINDOW = 16 * 1024 * 1024;

/**
 * Resource limits, checked before anything is allocated for the value they bound: a small hostile pickle
 * must not be able to ask for gigabytes. Each is far above what torch.save or Python ever writes.
 */
export const PICKLE_LIMITS = {
  /** Bytes of one LONG1/LONG4 integer (Python ints in dumps are at most 8 bytes; 1 KiB is ~2,500 digits). */
  maxIntBytes: 1024,
  /** Digits of one INT/LONG text literal (CPython itself refuses int() of more than 4,300 digits). */
  maxIntDigits: 4300,
  /** Containers nested in containers (CPython's pickler stops near its recursion limit of 1,000). */
  maxNesting: 1000,
  /**
   * Elements a tensor view may address beyond those its storage holds (stride-0 broadcasts): a view bigger
   * than its storage and than this is refused, so a few bytes cannot expand into a huge read.
   */
  maxBroadcastElements: 1 << 20,
};

/** Opcode byte -> its total width for the number opcodes of list fast paths (BININT1/2, BININT, BINFLOAT), else 0. */
const NUMBER_WIDTH = new Uint8Array(256);
NUMBER_WIDTH[0x4b] = 2;
NUMBER_WIDTH[0x4d] = 3;
NUMBER_WIDTH[0x4a] = 5;
NUMBER_WIDTH[0x47] = 9;

export class Unpickler {
  private buf: Uint8Array;
  private dv: DataView;
  private pos = 0;
  private end: number;
  /** Absolute offset (within the pickle) of buf[0]. */
  private base = 0;
  private readonly size: number;
  private readonly source: PickleSource | undefined;
  private readonly window: number;
  private readonly globalsSeen = new Map<string, GlobalRef>();
  private readonly globalsByModule = new Map<string, Map<string, GlobalRef>>();
  private replaced: WeakMap<object, PyValue> | undefined;
  private opAt = 0;
  private op = 0;
  /** Number of distinct memo keys: MEMOIZE stores at this index, as CPython's len(memo). */
  private memoSize = 0;

  private readonly typedLists: boolean;
  private readonly boxFloats: boolean;
  /** Scratch for `scanNumberBatches`: the numbers of the list being decoded, and how many / whether any float. */
  private numbers = new Float64Array(4096);
  private scanned = 0;
  private scannedFloats = false;
  /** What the last number run left: the count so far, and the bits of the opcodes met (see `readNumberRun`). */
  private runCount = 0;
  private runKinds = 0;
  /** Zeros that length-only lists are views of (grown to the longest such list). */
  private zeros = new Int32Array(0);
  private readonly lengthOnlyUnder: ReadonlySet<string> | undefined;
  private readonly unreadTextUnder: ReadonlySet<string> | undefined;

  constructor(
    input: Uint8Array | PickleSource,
    readonly opts: UnpickleOptions,
    window = DEFAULT_WINDOW,
  ) {
    this.typedLists = opts.typedLists === true;
    this.lengthOnlyUnder = opts.lengthOnlyUnder && opts.lengthOnlyUnder.size > 0 ? opts.lengthOnlyUnder : undefined;
    this.unreadTextUnder = opts.unreadTextUnder && opts.unreadTextUnder.size > 0 ? opts.unreadTextUnder : undefined;
    this.boxFloats = opts.boxIntegralFloats === true;
    this.window = Math.max(16, window);
    if (input instanceof Uint8Array) {
      this.buf = input;
      this.end = input.length;
      this.size = input.length;
      this.source = undefined;
    } else {
      this.source = input;
      this.size = input.size;
      this.buf = new Uint8Array(Math.min(this.window, input.size));
      this.end = 0;
    }
    this.dv = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  get file(): string {
    return this.opts.file;
  }

  /**
   * What an unfinished decode has built: the stack and the positions of its open MARKs (read only; valid
   * until the next `advance`).
   */
  pending(): PendingPickle {
    return { stack: this.stack, marks: this.marks };
  }

  /** `module.name` of every global named so far. */
  globalsSoFar(): string[] {
    return [...this.globalsSeen.keys()];
  }

  fail(problem: string): never {
    throw new PickleError(this.opts.file, problem, this.opAt, opcodeName(this.op));
  }

  /** Makes `n` bytes from `this.pos` available in the window, or fails as truncated. */
  private need(n: number): void {
    if (this.pos + n <= this.end) return;
    const absPos = this.base + this.pos;
    if (!this.source || absPos + n > this.size) {
      this.fail(`truncated pickle: needs ${n} bytes at offset ${absPos}, only ${this.size - absPos} left`);
    }
    const keep = this.end - this.pos;
    const want = Math.min(this.size - absPos, Math.max(n, this.window));
    let buf = this.buf;
    if (want > buf.length) buf = new Uint8Array(want);
    buf.copyWithin(0, this.pos, this.end);
    if (buf !== this.buf) buf.set(this.buf.subarray(this.pos, this.end), 0);
    const got = this.source.read(this.base + this.end, buf, keep, want - keep);
    if (got < want - keep) this.fail(`truncated pickle: the source ended at ${this.base + this.end + got} of ${this.size} bytes`);
    this.buf = buf;
    this.dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.base = absPos;
    this.pos = 0;
    this.end = want;
  }

  private readLine(): string {
    let i = this.pos;
    for (;;) {
      while (i < this.end && this.buf[i] !== 0x0a) i++;
      if (i < this.end) break;
      const consumed = i - this.pos;
      if (!this.source || this.base + this.end >= this.size) this.fail('truncated pickle: line without newline');
      // Grow geometrically so a long line costs linear time.
      this.need(Math.min(Math.max(2 * consumed, consumed + 1), this.size - this.base - this.pos));
      i = this.pos + consumed;
    }
    const line = latin1(this.buf, this.pos, i);
    this.pos = i + 1;
    return line;
  }

  // The machine's state, kept between `advance` calls.
  private readonly stack: PyValue[] = [];
  private readonly marks: number[] = [];
  private readonly memo: PyValue[] = [];
  private floor = 0;
  private protocol = 0;
  private readonly seen = new Uint8Array(256);
  private result: PickleResult | null = null;

  /** Decodes the whole pickle. */
  run(): PickleResult {
    return this.advance(Infinity)!;
  }

  /**
   * Decodes at most `budget` more opcodes: the value once STOP is reached, or null when the budget ran out
   * first (the next call goes on where this one stopped; `pending()` shows what is built so far).
   */
  advance(budget: number): PickleResult | null {
    if (this.result) return this.result;
    const { stack, marks, memo, seen } = this;
    let floor = this.floor;
    let protocol = this.protocol;
    let buf = this.buf;
    let dv = this.dv;
    let pos = this.pos;
    let end = this.end;
    let left = budget;

    for (;;) {
      if (--left < 0) {
        this.pos = pos;
        this.floor = floor;
        this.protocol = protocol;
        return null;
      }
      if (pos + 16 > end) {
        this.pos = pos;
        if (pos >= end) {
          if (this.source && this.base + end < this.size) this.need(1);
          else {
            this.opAt = this.base + pos;
            this.op = -1;
            throw new PickleError(this.opts.file, 'truncated pickle: input ended before STOP', this.base + pos);
          }
        } else if (this.source && this.base + end < this.size) {
          this.need(Math.min(16, this.size - this.base - pos));
        }
        buf = this.buf;
        dv = this.dv;
        pos = this.pos;
        end = this.end;
      }
      const op = buf[pos];
      this.opAt = this.base + pos;
      this.op = op;
      seen[op] = 1;
      pos++;
      switch (op) {
        case 0x4b: // BININT1
          if (pos + 1 > end) this.fail('truncated pickle');
          stack.push(buf[pos]);
          pos += 1;
          break;
        case 0x4d: // BININT2
          if (pos + 2 > end) this.fail('truncated pickle');
          stack.push(buf[pos] | (buf[pos + 1] << 8));
          pos += 2;
          break;
        case 0x4a: // BININT
          if (pos + 4 > end) this.fail('truncated pickle');
          stack.push(buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16) | (buf[pos + 3] << 24));
          pos += 4;
          break;
        case 0x47: // BINFLOAT
          if (pos + 8 > end) this.fail('truncated pickle');
          stack.push(this.float(dv.getFloat64(pos, false)));
          pos += 8;
          break;
        case 0x28: // MARK
          pos = this.mark(buf, dv, pos, end);
          floor = marks.length ? marks[marks.length - 1] : 0;
          break;
        case 0x65: // APPENDS
        case 0x61: // APPEND
        case 0x75: // SETITEMS
        case 0x73: // SETITEM
        case 0x85: // TUPLE1
        case 0x86: // TUPLE2
        case 0x87: // TUPLE3
        case 0x74: // TUPLE
        case 0x6c: // LIST
        case 0x64: // DICT
          this.collection(op, floor);
          floor = marks.length ? marks[marks.length - 1] : 0;
          break;
        case 0x71: // BINPUT
        case 0x72: // LONG_BINPUT
        case 0x94: // MEMOIZE
        case 0x68: // BINGET
        case 0x6a: // LONG_BINGET
          pos = this.memoOp(op, buf, dv, pos, end, floor);
          break;
        case 0x58: // BINUNICODE
        case 0x8c: // SHORT_BINUNICODE
        case 0x8d: // BINUNICODE8
        case 0x8a: // LONG1
        case 0x8b: // LONG4
          this.pos = pos;
          this.sized(op);
          buf = this.buf;
          dv = this.dv;
          pos = this.pos;
          end = this.end;
          break;
        case 0x7d: // EMPTY_DICT
          stack.push({});
          break;
        case 0x5d: // EMPTY_LIST
          stack.push([]);
          break;
        case 0x29: // EMPTY_TUPLE
          stack.push(new PyTuple());
          break;
        case 0x4e: // NONE
          stack.push(null);
          break;
        case 0x88: // NEWTRUE
          stack.push(true);
          break;
        case 0x89: // NEWFALSE
          stack.push(false);
          break;
        case 0x80: // PROTO
          if (pos + 1 > end) this.fail('truncated pickle');
          protocol = buf[pos];
          if (protocol > 5) this.fail(`unsupported pickle protocol ${protocol}`);
          pos += 1;
          break;
        case 0x95: // FRAME: framing is a hint for buffered readers; the opcodes inside read sequentially.
          if (pos + 8 > end) this.fail('truncated pickle');
          this.u64(dv, pos);
          pos += 8;
          break;
        case 0x2e: // STOP
          if (stack.length - 1 < floor || stack.length === 0) this.fail('stack underflow: nothing to return at STOP');
          this.pos = pos;
          this.checkNesting(stack[stack.length - 1]);
          this.result = { value: stack[stack.length - 1], protocol, globals: [...this.globalsSeen.keys()], opcodes: opcodeList(seen) };
          return this.result;
        default:
          this.pos = pos;
          this.other(op, stack, marks, memo);
          floor = marks.length ? marks[marks.length - 1] : 0;
          buf = this.buf;
          dv = this.dv;
          pos = this.pos;
          end = this.end;
      }
    }
  }

  /**
   * MARK. Fast path for `list MARK <ints/floats> APPENDS` (the bulk of rollout dumps): numbers go straight
   * into the list, unboxed, never through the stack. Returns where decoding goes on.
   */
  private mark(buf: Uint8Array, dv: DataView, pos: number, end: number): number {
    const { stack, marks, seen } = this;
    const target = stack.length > 0 ? stack[stack.length - 1] : undefined;
    if (Array.isArray(target) && !isPyTuple(target)) {
      if (target.length === 0 && this.typedLists) {
        const key = this.lengthOnlyUnder && stack.length > 1 ? stack[stack.length - 2] : undefined;
        if (typeof key === 'string' && this.lengthOnlyUnder!.has(key)) {
          // Only its length is wanted: its numbers are counted, not kept.
          const blocksEnd = this.scanNumberBatches(buf, dv, pos, end, seen, false);
          if (blocksEnd > 0) {
            const n = this.scanned;
            if (this.zeros.length < n) this.zeros = new Int32Array(Math.max(n, 2 * this.zeros.length));
            const typed = this.zeros.subarray(0, n);
            stack[stack.length - 1] = typed;
            this.replace(target, typed);
            seen[0x65] = 1;
            return blocksEnd;
          }
        }
        // A fresh list decoded as a typed array: one pass over its `MARK <numbers> APPENDS` batches.
        const blocksEnd = this.scanNumberBatches(buf, dv, pos, end, seen);
        if (blocksEnd > 0) {
          const n = this.scanned;
          const typed = this.scannedFloats ? this.numbers.slice(0, n) : Int32Array.from(this.numbers.subarray(0, n));
          stack[stack.length - 1] = typed;
          this.replace(target, typed);
          seen[0x65] = 1;
          return blocksEnd;
        }
      } else if (target.length === 0) {
        // A fresh list: count the numbers of its `MARK <numbers> APPENDS` batches first, so the
        // list is sized once instead of growing batch by batch.
        let q = pos;
        let total = 0;
        let blocksEnd = -1;
        for (;;) {
          let cnt = 0;
          while (q < end) {
            const w = NUMBER_WIDTH[buf[q]];
            if (w === 0 || q + w > end) break;
            seen[buf[q]] = 1;
            q += w;
            cnt++;
          }
          if (q >= end || buf[q] !== 0x65) break;
          total += cnt;
          blocksEnd = ++q;
          if (q < end && buf[q] === 0x28) q++;
          else break;
        }
        if (blocksEnd > 0 && total > 0) {
          target.length = total;
          fillNumbers(target as number[], buf, dv, pos, blocksEnd, this.boxFloats);
          seen[0x65] = 1;
          return blocksEnd;
        }
      }
      const start = target.length;
      let p = pos;
      while (p + 9 <= end) {
        const o = buf[p];
        if (o === 0x4b) {
          target.push(buf[p + 1]);
          p += 2;
        } else if (o === 0x47) {
          target.push(this.float(dv.getFloat64(p + 1, false)));
          p += 9;
        } else if (o === 0x4d) {
          target.push(buf[p + 1] | (buf[p + 2] << 8));
          p += 3;
        } else if (o === 0x4a) {
          target.push(buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24));
          p += 5;
        } else break;
        seen[o] = 1;
      }
      if (p < end && buf[p] === 0x65) {
        seen[0x65] = 1;
        return p + 1;
      }
      // Not a plain run of numbers: hand what was read back to the stack and go on as usual.
      marks.push(stack.length);
      for (let i = start; i < target.length; i++) stack.push(target[i]);
      target.length = start;
      return p;
    }
    marks.push(stack.length);
    return pos;
  }

  /** Pops the innermost MARK: where its items start on the stack. */
  private popMark(): number {
    if (this.marks.length === 0) this.fail('no MARK on the stack');
    return this.marks.pop()!;
  }

  /** The opcodes that build a list, tuple or dict from the stack (the caller reads the floor again after them). */
  private collection(op: number, floor: number): void {
    const { stack, marks } = this;
    switch (op) {
      case 0x65: {
        // APPENDS
        const m = this.popMark();
        if (m < 1 || m - 1 < this.floorOf(marks)) this.fail('stack underflow: no list below the MARK');
        const target = stack[m - 1];
        if (Array.isArray(target) && !isPyTuple(target)) {
          for (let i = m; i < stack.length; i++) target.push(stack[i]);
        } else this.appendTo(stack, m - 1, stack.slice(m));
        stack.length = m;
        break;
      }
      case 0x61: {
        // APPEND
        if (stack.length - 2 < floor) this.fail('stack underflow');
        const v = stack.pop()!;
        const target = stack[stack.length - 1];
        if (Array.isArray(target) && !isPyTuple(target)) target.push(v);
        else this.appendTo(stack, stack.length - 1, [v]);
        break;
      }
      case 0x75: {
        // SETITEMS
        const m = this.popMark();
        if (m < 1 || m - 1 < this.floorOf(marks)) this.fail('stack underflow: no dict below the MARK');
        if ((stack.length - m) % 2 !== 0) this.fail('odd number of items for SETITEMS');
        this.setItems(stack, m - 1, m);
        stack.length = m;
        break;
      }
      case 0x73: // SETITEM
        if (stack.length - 3 < floor) this.fail('stack underflow');
        this.setItems(stack, stack.length - 3, stack.length - 2);
        stack.length -= 2;
        break;
      case 0x85: // TUPLE1
      case 0x86: // TUPLE2
      case 0x87: // TUPLE3
        if (stack.length - (op - 0x84) < floor) this.fail('stack underflow');
        stack.push(this.tupleFrom(stack.length - (op - 0x84)));
        break;
      case 0x74: // TUPLE
        stack.push(this.tupleFrom(this.popMark()));
        break;
      case 0x6c: // LIST
        stack.push(this.popMarkItems(stack));
        break;
      case 0x64: {
        // DICT
        const m = this.popMark();
        if ((stack.length - m) % 2 !== 0) this.fail('odd number of items for DICT');
        stack.splice(m, 0, {});
        this.setItems(stack, m, m + 1);
        stack.length = m + 1;
        break;
      }
    }
  }

  /** The stack's items from `from` on, taken off it as a tuple. */
  private tupleFrom(from: number): PyTuple<PyValue> {
    const { stack } = this;
    const t = new PyTuple<PyValue>();
    for (let i = from; i < stack.length; i++) t.push(stack[i]);
    stack.length = from;
    return t;
  }

  /** The memo's opcodes (the PUT and GET forms, MEMOIZE); returns where decoding goes on. */
  private memoOp(op: number, buf: Uint8Array, dv: DataView, pos: number, end: number, floor: number): number {
    const { stack, memo } = this;
    switch (op) {
      case 0x71: // BINPUT
        if (pos + 1 > end) this.fail('truncated pickle');
        if (stack.length <= floor) this.fail('stack underflow: nothing to memoize');
        if (memo[buf[pos]] === undefined) this.memoSize++;
        memo[buf[pos]] = this.noteMemo(stack[stack.length - 1], buf[pos]);
        return pos + 1;
      case 0x72: {
        // LONG_BINPUT
        if (pos + 4 > end) this.fail('truncated pickle');
        if (stack.length <= floor) this.fail('stack underflow: nothing to memoize');
        const idx = dv.getUint32(pos, true);
        if (memo[idx] === undefined) this.memoSize++;
        memo[idx] = this.noteMemo(stack[stack.length - 1], idx);
        return pos + 4;
      }
      case 0x94: // MEMOIZE
        if (stack.length <= floor) this.fail('stack underflow: nothing to memoize');
        if (memo[this.memoSize] !== undefined) this.fail(`MEMOIZE would overwrite memo key ${this.memoSize}`);
        memo[this.memoSize] = this.noteMemo(stack[stack.length - 1], this.memoSize);
        this.memoSize++;
        return pos;
      case 0x68: {
        // BINGET
        if (pos + 1 > end) this.fail('truncated pickle');
        const v = memo[buf[pos]];
        if (v === undefined) this.fail(`memo key ${buf[pos]} is missing`);
        stack.push(this.replaced ? this.resolve(v) : v);
        return pos + 1;
      }
      case 0x6a: {
        // LONG_BINGET
        if (pos + 4 > end) this.fail('truncated pickle');
        const idx = dv.getUint32(pos, true);
        const v = memo[idx];
        if (v === undefined) this.fail(`memo key ${idx} is missing`);
        stack.push(this.replaced ? this.resolve(v) : v);
        return pos + 4;
      }
    }
    return pos;
  }

  /**
   * Whether the string about to be pushed is the value of a key named in `unreadTextUnder`: the key is on
   * top, in the value slot of a `MARK k v … SETITEMS` batch of a dict, or after the dict of a `k v SETITEM`
   * outside a list's `APPENDS` batch (where a key-like item may be a list element: those are decoded).
   */
  private unreadKey(): boolean {
    const { stack, marks } = this;
    const n = stack.length;
    const key = this.unreadTextUnder && n > 0 ? stack[n - 1] : undefined;
    if (typeof key !== 'string' || !this.unreadTextUnder!.has(key)) return false;
    const m = marks.length ? marks[marks.length - 1] : 0;
    const isDict = (v: PyValue | undefined) => v instanceof Map || isStringKeyed(v);
    if (m >= 1 && isDict(stack[m - 1])) return (n - m) % 2 === 1;
    return n >= 2 && n - 2 >= m && isDict(stack[n - 2]) && !(m >= 1 && Array.isArray(stack[m - 1]));
  }

  /** A length-prefixed value (a UTF-8 string, a long) read from `this.pos`, the window refilled for it if need be. */
  private sized(op: number): void {
    const { buf, dv, end } = this;
    const long = op === 0x8a || op === 0x8b; // LONG1, LONG4
    // SHORT_BINUNICODE and LONG1 count in one byte, BINUNICODE and LONG4 in four, BINUNICODE8 in eight
    const w = op === 0x8c || op === 0x8a ? 1 : op === 0x58 || op === 0x8b ? 4 : 8;
    let pos = this.pos;
    if (pos + w > end) this.fail('truncated pickle');
    let n: number;
    if (long) {
      n = w === 1 ? buf[pos] : dv.getInt32(pos, true);
      if (n < 0) this.fail('negative LONG4 byte count');
      if (n > PICKLE_LIMITS.maxIntBytes) this.fail(`integer of ${n} bytes exceeds the limit of ${PICKLE_LIMITS.maxIntBytes}`);
    } else n = w === 1 ? buf[pos] : w === 4 ? dv.getUint32(pos, true) : this.u64(dv, pos);
    pos += w;
    if (pos + n > end) {
      this.pos = pos;
      this.need(n);
      pos = this.pos;
    }
    this.stack.push(long ? decodeLong(this.buf, pos, n) : n > UNREAD_TEXT_ABOVE && this.unreadKey() ? '' : decodeUtf8(this.buf, pos, pos + n));
    this.pos = pos + n;
  }


  /**
   * Decodes the numbers of consecutive complete `<numbers> APPENDS [MARK <numbers> APPENDS …]` batches from
   * `from` into `this.numbers` (count in `this.scanned`, any float in `this.scannedFloats`). Returns the
   * offset just past the last complete batch's APPENDS, or -1 when there is none (or it holds no number).
   * With `keep` false the numbers are only counted, not stored.
   */
  private scanNumberBatches(buf: Uint8Array, dv: DataView, from: number, end: number, seen: Uint8Array, keep = true): number {
    let k = 0;
    let q = from;
    let blocksEnd = -1;
    this.runKinds = 0;
    for (;;) {
      const batchStart = k;
      q = keep ? this.readNumberRun(buf, dv, q, end, k) : this.countNumberRun(buf, q, end, k);
      k = this.runCount;
      if (q >= end || buf[q] !== 0x65) {
        k = batchStart;
        break;
      }
      blocksEnd = ++q;
      if (q < end && buf[q] === 0x28) q++;
      else break;
    }
    const kinds = this.runKinds;
    if (kinds & 1) seen[0x4b] = 1;
    if (kinds & 2) seen[0x47] = 1;
    if (kinds & 4) seen[0x4d] = 1;
    if (kinds & 8) seen[0x4a] = 1;
    this.scanned = k;
    this.scannedFloats = (kinds & 2) !== 0;
    return k > 0 ? blocksEnd : -1;
  }

  /**
   * Reads the whole numbers from `q` on into `this.numbers` from index `k`: returns where they stop (`this.runCount`
   * the count so far, `this.runKinds` gains their opcodes' bits: 1 BININT1, 2 BINFLOAT, 4 BININT2, 8 BININT).
   */
  private readNumberRun(buf: Uint8Array, dv: DataView, q: number, end: number, k: number): number {
    let out = this.numbers;
    let kinds = 0;
    while (q < end) {
      const o = buf[q];
      let v: number;
      if (o === 0x4b) {
        if (q + 2 > end) break;
        v = buf[q + 1];
        q += 2;
        kinds |= 1;
      } else if (o === 0x47) {
        if (q + 9 > end) break;
        v = dv.getFloat64(q + 1, false);
        q += 9;
        kinds |= 2;
      } else if (o === 0x4d) {
        if (q + 3 > end) break;
        v = buf[q + 1] | (buf[q + 2] << 8);
        q += 3;
        kinds |= 4;
      } else if (o === 0x4a) {
        if (q + 5 > end) break;
        v = buf[q + 1] | (buf[q + 2] << 8) | (buf[q + 3] << 16) | (buf[q + 4] << 24);
        q += 5;
        kinds |= 8;
      } else break;
      if (k === out.length) {
        const grown = new Float64Array(out.length * 2);
        grown.set(out);
        out = this.numbers = grown;
      }
      out[k++] = v;
    }
    this.runCount = k;
    this.runKinds |= kinds;
    return q;
  }

  /** `readNumberRun` that only counts: each opcode is stepped over by its width, its number never read. */
  private countNumberRun(buf: Uint8Array, q: number, end: number, k: number): number {
    let kinds = 0;
    while (q < end) {
      const o = buf[q];
      // a run of one opcode (a list's numbers are mostly of one width) is stepped over in a tight loop
      const width = o === 0x47 ? 9 : o === 0x4b ? 2 : o === 0x4d ? 3 : o === 0x4a ? 5 : 0;
      if (width === 0 || q + width > end) break;
      kinds |= o === 0x47 ? 2 : o === 0x4b ? 1 : o === 0x4d ? 4 : 8;
      q += width;
      k++;
      while (q + width <= end && buf[q] === o) {
        q += width;
        k++;
      }
    }
    this.runCount = k;
    this.runKinds |= kinds;
    return q;
  }

  /**
   * Fails when containers nest deeper than PICKLE_LIMITS.maxNesting. Every reader of a value walks it
   * recursively somewhere (String(), JSON, the dump decoders), so a deeper value would overflow the stack
   * there. A depth-first walk enters each container once (memo references make a DAG, not a tree; a
   * container that holds itself is a cycle, not depth) and keeps the levels below each one it finished: a
   * container met again adds those levels to the path that meets it.
   */
  private checkNesting(root: PyValue): void {
    const limit = PICKLE_LIMITS.maxNesting;
    const children = (v: object): unknown[] => {
      if (Array.isArray(v)) return v;
      if (v instanceof Map) return [...v.keys(), ...v.values()];
      if (v instanceof Set) return [...v];
      if (v instanceof PyObject) return [v.args, v.state, ...(v.items ? [...v.items.keys(), ...v.items.values()] : []), v.listItems];
      if (v instanceof PyEnum) return [v.value, v.state];
      if (isStringKeyed(v)) return Object.values(v);
      return [];
    };
    const isNode = (v: unknown): v is object =>
      typeof v === 'object' && v !== null && !ArrayBuffer.isView(v) && !(v instanceof Tensor) && !(v instanceof Storage);
    if (!isNode(root)) return;
    const tooDeep = (): never => this.failAt(`containers nested deeper than ${limit} levels`);
    // Containers entered: on the path (undefined) or done with (their levels, themselves included).
    const levels = new Map<object, number | undefined>([[root, undefined]]);
    const frames: { node: object; kids: unknown[]; next: number; below: number }[] = [{ node: root, kids: children(root), next: 0, below: 0 }];
    while (frames.length > 0) {
      const f = frames[frames.length - 1];
      if (f.next < f.kids.length) {
        const k = f.kids[f.next++];
        if (!isNode(k)) continue;
        if (levels.has(k)) {
          const done = levels.get(k);
          if (done === undefined) continue; // a cycle
          if (frames.length + done > limit) tooDeep();
          if (done > f.below) f.below = done;
          continue;
        }
        if (frames.length >= limit) tooDeep();
        levels.set(k, undefined);
        frames.push({ node: k, kids: children(k), next: 0, below: 0 });
        continue;
      }
      frames.pop();
      levels.set(f.node, f.below + 1);
      const parent = frames[frames.length - 1];
      if (parent !== undefined && f.below + 1 > parent.below) parent.below = f.below + 1;
    }
  }

  /** A failure about the value as a whole (not one opcode). */
  private failAt(problem: string): never {
    throw new PickleError(this.opts.file, problem);
  }

  private u64(dv: DataView, at: number): number {
    const v = dv.getBigUint64(at, true);
    if (v > BigInt(this.size)) this.fail(`impossible length ${v}`);
    return Number(v);
  }

  private noteMemo(v: PyValue, idx: number): PyValue {
    if (v instanceof NdArrayPending) v.memoSlots.push(idx);
    return v;
  }

  /** The less common opcodes; `this.pos` is just past the opcode byte. */
  private floorOf(marks: number[]): number {
    return marks.length ? marks[marks.length - 1] : 0;
  }

  private popChecked(stack: PyValue[], marks: number[]): PyValue {
    if (stack.length <= this.floorOf(marks)) this.fail('stack underflow');
    return stack.pop()!;
  }

  private topChecked(stack: PyValue[], marks: number[]): PyValue {
    if (stack.length <= this.floorOf(marks)) this.fail('stack underflow');
    return stack[stack.length - 1];
  }

  private popMarkItems(stack: PyValue[]): PyValue[] {
    const m = this.popMark();
    const items = stack.slice(m);
    stack.length = m;
    return items;
  }

  private take(n: number): Uint8Array {
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }

  private u32(): number {
    this.need(4);
    const v = this.dv.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }

  private other(op: number, stack: PyValue[], marks: number[], memo: PyValue[]): void {
    switch (op) {
      case 0x30: // POP
        if (stack.length > this.floorOf(marks)) stack.pop();
        else this.popMarkItems(stack);
        return;
      case 0x31: // POP_MARK
        this.popMarkItems(stack);
        return;
      case 0x32: // DUP
        stack.push(this.topChecked(stack, marks));
        return;
      case 0x46: {
        // FLOAT
        const line = this.readLine().trim();
        const v = line === 'nan' ? NaN : line === 'inf' ? Infinity : line === '-inf' ? -Infinity : Number(line);
        if (Number.isNaN(v) && line !== 'nan') this.fail(`bad FLOAT literal ${JSON.stringify(line.slice(0, 40))}`);
        stack.push(this.float(v));
        return;
      }
      case 0x49: {
        // INT
        const line = this.readLine().trim();
        if (line === '00') stack.push(false);
        else if (line === '01') stack.push(true);
        else stack.push(this.parseIntLiteral(line));
        return;
      }
      case 0x4c: // LONG
        stack.push(this.parseIntLiteral(this.readLine().trim().replace(/L$/, '')));
        return;
      case 0x53: {
        // STRING
        const line = this.readLine().trim();
        const q = line[0];
        if (line.length < 2 || (q !== "'" && q !== '"') || line[line.length - 1] !== q) this.fail('bad STRING literal');
        stack.push(unescapePy(line.slice(1, -1)));
        return;
      }
      case 0x54: // BINSTRING
      case 0x55: {
        // SHORT_BINSTRING
        let n: number;
        if (op === 0x55) {
          n = this.take(1)[0];
        } else {
          this.need(4);
          n = this.dv.getInt32(this.pos, true);
          this.pos += 4;
          if (n < 0) this.fail('negative BINSTRING length');
        }
        const b = this.take(n);
        stack.push(decodeUtf8(b, 0, b.length));
        return;
      }
      case 0x56: {
        // UNICODE (raw-unicode-escape)
        const line = this.readLine();
        stack.push(line.replace(/\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})/g, (_, a, b) => String.fromCodePoint(parseInt(a ?? b, 16))));
        return;
      }
      case 0x42: // BINBYTES
      case 0x43: // SHORT_BINBYTES
      case 0x8e: // BINBYTES8
      case 0x96: {
        // BYTEARRAY8
        let n: number;
        if (op === 0x43) n = this.take(1)[0];
        else if (op === 0x42) n = this.u32();
        else {
          this.need(8);
          n = this.u64(this.dv, this.pos);
          this.pos += 8;
        }
        stack.push(this.take(n).slice());
        return;
      }
      case 0x50: {
        // PERSID
        stack.push(this.persistent(this.readLine()));
        return;
      }
      case 0x51: // BINPERSID
        stack.push(this.persistent(this.popChecked(stack, marks)));
        return;
      case 0x52: // REDUCE
      case 0x81: {
        // NEWOBJ
        const isNew = op === 0x81;
        const args = this.popChecked(stack, marks);
        const fn = this.popChecked(stack, marks);
        if (!Array.isArray(args)) this.fail(`${isNew ? 'NEWOBJ' : 'REDUCE'} arguments are not a tuple`);
        stack.push(this.callGlobal(fn, args as PyValue[], isNew));
        return;
      }
      case 0x92: {
        // NEWOBJ_EX
        const kwargs = this.popChecked(stack, marks);
        const args = this.popChecked(stack, marks);
        const cls = this.popChecked(stack, marks);
        if (!Array.isArray(args)) this.fail('NEWOBJ_EX arguments are not a tuple');
        const all = [...(args as PyValue[])];
        if (kwargs !== null && !(isStringKeyed(kwargs) && Object.keys(kwargs).length === 0)) all.push(kwargs);
        stack.push(this.callGlobal(cls, all, true));
        return;
      }
      case 0x62: {
        // BUILD
        const state = this.popChecked(stack, marks);
        const target = this.topChecked(stack, marks);
        const built = this.build(target, state);
        if (built !== target) {
          stack[stack.length - 1] = built;
          if (target instanceof NdArrayPending) for (const i of target.memoSlots) memo[i] = built;
        }
        return;
      }
      case 0x63: {
        // GLOBAL
        const module = this.readLine();
        const name = this.readLine();
        stack.push(this.global(module, name));
        return;
      }
      case 0x93: {
        // STACK_GLOBAL
        const name = this.popChecked(stack, marks);
        const module = this.popChecked(stack, marks);
        if (typeof module !== 'string' || typeof name !== 'string') this.fail('STACK_GLOBAL needs two strings');
        stack.push(this.global(module, name));
        return;
      }
      case 0x69: {
        // INST
        const module = this.readLine();
        const name = this.readLine();
        const args = this.popMarkItems(stack);
        stack.push(this.callGlobal(this.global(module, name), args, true));
        return;
      }
      case 0x6f: {
        // OBJ
        const items = this.popMarkItems(stack);
        if (items.length === 0) this.fail('OBJ without a class');
        stack.push(this.callGlobal(items[0], items.slice(1), true));
        return;
      }
      case 0x70: {
        // PUT
        const idx = this.parseIndex(this.readLine());
        if (memo[idx] === undefined) this.memoSize++;
        memo[idx] = this.noteMemo(this.topChecked(stack, marks), idx);
        return;
      }
      case 0x67: {
        // GET
        const idx = this.parseIndex(this.readLine());
        const v = memo[idx];
        if (v === undefined) this.fail(`memo key ${idx} is missing`);
        stack.push(this.replaced ? this.resolve(v) : v);
        return;
      }
      case 0x8f: // EMPTY_SET
        stack.push(new Set());
        return;
      case 0x90: {
        // ADDITEMS
        const items = this.popMarkItems(stack);
        const s = this.topChecked(stack, marks);
        if (!(s instanceof Set)) this.fail('ADDITEMS target is not a set');
        for (const x of items) s.add(x);
        return;
      }
      case 0x91: // FROZENSET
        stack.push(new Set(this.popMarkItems(stack)));
        return;
      case 0x82: // EXT1
      case 0x83: // EXT2
      case 0x84: {
        // EXT4: codes of copyreg's extension registry, which has no entries we could know.
        const n = op === 0x82 ? this.take(1)[0] : op === 0x83 ? this.take(2)[0] | (this.buf[this.pos - 1] << 8) : this.u32();
        stack.push(new PyObject('copyreg', `extension_${n}`));
        return;
      }
      case 0x97: // NEXT_BUFFER
        this.fail('out-of-band buffers are not supported');
      // falls through (fail never returns)
      case 0x98: // READONLY_BUFFER
        this.topChecked(stack, marks);
        return;
      default:
        this.fail('unknown opcode');
    }
  }

  private parseIntLiteral(s: string): number | bigint {
    if (s.length > PICKLE_LIMITS.maxIntDigits + 1) this.fail(`integer literal of ${s.length} characters exceeds the limit of ${PICKLE_LIMITS.maxIntDigits} digits`);
    if (!/^[+-]?\d+$/.test(s)) this.fail(`bad integer literal ${JSON.stringify(s.slice(0, 40))}`);
    return intValue(BigInt(s));
  }

  private parseIndex(s: string): number {
    const n = Number(s.trim());
    if (!Number.isSafeInteger(n) || n < 0) this.fail(`bad memo index ${JSON.stringify(s.slice(0, 40))}`);
    return n;
  }

  private persistent(pid: PyValue): PyValue {
    if (this.opts.persistentLoad) return this.opts.persistentLoad(pid);
    return new PyObject('pickle', 'persistent_id', [pid]);
  }

  private float(v: number): PyValue {
    return this.boxFloats && Number.isInteger(v) ? new PyFloat(v) : v;
  }

  private global(module: string, name: string): GlobalRef {
    // Looked up by module, then name: no key string is built for the (many) repeated GLOBALs.
    let byName = this.globalsByModule.get(module);
    if (!byName) this.globalsByModule.set(module, (byName = new Map()));
    let g = byName.get(name);
    if (!g) {
      if (this.opts.allowGlobal && !this.opts.allowGlobal(`${module}.${name}`)) {
        this.fail(`names the global ${module}.${name}, which this kind of file never holds; refused (nothing was executed)`);
      }
      const norm = `${MODULE_ALIASES[module] ?? module}.${name}`;
      g = new GlobalRef(module, name, HANDLERS[norm]);
      byName.set(name, g);
      this.globalsSeen.set(`${module}.${name}`, g);
    }
    return g;
  }

  /** Calls `fn(*args)` if `fn` is allowlisted; otherwise records the call inertly. */
  private callGlobal(fn: PyValue, args: PyValue[], isNew: boolean): PyValue {
    if (fn instanceof GlobalRef) {
      if (fn.call && (!isNew || NEWOBJ_OK.has(`${MODULE_ALIASES[fn.module] ?? fn.module}.${fn.name}`))) return fn.call(args, this);
      // Python's Enum pickles members as `Class(value)`; a function call (lower-case name) never is one.
      if (!isNew && args.length === 1 && isScalar(args[0]) && /^[A-Z]/.test(fn.name.slice(fn.name.lastIndexOf('.') + 1))) {
        return new PyEnum(fn.module, fn.name, args[0]);
      }
      const o = new PyObject(fn.module, fn.name, args);
      if (isNew) o.newobj = true;
      return o;
    }
    if (fn instanceof PyEnum && fn.member !== undefined) return new PyObject(fn.module, `${fn.name}.${fn.member}`, args);
    if (fn instanceof PyObject) return new PyObject(fn.module, fn.name, args);
    this.fail(`cannot call a ${describe(fn)}`);
  }

  private build(target: PyValue, state: PyValue): PyValue {
    if (target instanceof NdArrayPending) return this.numpyArray(target, state);
    if (target instanceof NumpyDType) {
      if (Array.isArray(state) && typeof state[1] === 'string') target.byteorder = state[1];
      target.state = state;
      return target;
    }
    if (target instanceof PyObject || target instanceof PyEnum) {
      target.state = state;
      return target;
    }
    // Tensors and containers: Python would set attributes we have no place for; nothing to run.
    return target;
  }

  private appendTo(stack: PyValue[], at: number, items: PyValue[]): void {
    const target = stack[at];
    if (target instanceof Int32Array || target instanceof Float64Array) {
      // A typed list that goes on with other items: back to a plain list, wherever it is referenced.
      const list: PyValue[] = Array.from(target);
      for (const x of items) list.push(x);
      stack[at] = list;
      this.replace(target, list);
      return;
    }
    if (target instanceof PyObject) {
      (target.listItems ??= []).push(...items);
      return;
    }
    if (target instanceof Set) {
      for (const x of items) target.add(x);
      return;
    }
    this.fail(`cannot append to a ${describe(target)}`);
  }

  /** From now on, memo reads of `from` yield `to` (a container whose representation changed). */
  private replace(from: object, to: PyValue): void {
    this.replaced ??= new WeakMap();
    this.replaced.set(from, to);
  }

  private resolve(v: PyValue): PyValue {
    let r = v;
    for (let k = 0; k < 4 && typeof r === 'object' && r !== null; k++) {
      const next = this.replaced!.get(r);
      if (next === undefined) break;
      r = next;
    }
    return r;
  }

  /** Sets stack[from..] key/value pairs into the dict at stack[at]. */
  private setItems(stack: PyValue[], at: number, from: number): void {
    let d = stack[at];
    if (isStringKeyed(d)) {
      let i = from;
      for (; i < stack.length; i += 2) {
        const k = stack[i];
        if (typeof k !== 'string') break;
        setKey(d, k, stack[i + 1]);
      }
      if (i >= stack.length) return;
      // A non-string key: this dict becomes a Map, everywhere it is referenced from now on.
      const m = new Map<PyValue, PyValue>(Object.entries(d));
      this.replace(d, m);
      stack[at] = m;
      d = m;
    }
    if (d instanceof Map) {
      for (let i = from; i < stack.length; i += 2) d.set(stack[i], stack[i + 1]);
      return;
    }
    if (d instanceof PyObject) {
      const items = (d.items ??= new Map());
      for (let i = from; i < stack.length; i += 2) items.set(stack[i], stack[i + 1]);
      return;
    }
    this.fail(`cannot set items on a ${describe(d)}`);
  }

  // ---- allowlisted constructions (called by HANDLERS) ----

  inert(module: string, name: string, args: PyValue[]): PyObject {
    return new PyObject(module, name, args);
  }

  iterable(v: PyValue, what: string): PyValue[] {
    if (Array.isArray(v)) return v;
    if (v instanceof Int32Array || v instanceof Float64Array) return Array.from(v);
    if (v instanceof Set) return [...v];
    if (v instanceof Map) return [...v.keys()];
    if (isStringKeyed(v)) return Object.keys(v);
    if (typeof v === 'string') return [...v];
    if (v instanceof Uint8Array) return [...v];
    this.fail(`${what} needs an iterable, got a ${describe(v)}`);
  }

  getattr(args: PyValue[]): PyValue {
    const [obj, attr] = args;
    if (typeof attr !== 'string') return this.inert('builtins', 'getattr', args);
    if (obj instanceof GlobalRef) {
      const last = obj.name.slice(obj.name.lastIndexOf('.') + 1);
      // `getattr(Class, 'MEMBER')`: how enums are pickled by name.
      if (/^[A-Z][A-Z0-9_]*$/.test(attr) && /^[A-Z]/.test(last) && /[a-z]/.test(last)) return new PyEnum(obj.module, obj.name, undefined, attr);
      return this.global(obj.module, `${obj.name}.${attr}`);
    }
    return this.inert('builtins', 'getattr', args);
  }

  rebuildTensor(a: PyValue[], fn: string, requiresGrad: boolean, dtypeRef?: PyValue): PyValue {
    const first = a[0];
    const offset = asInt(a[1]);
    const shape = intList(a[2]);
    const stride = a.length > 3 ? intList(a[3]) : shape && contiguousStride(shape);
    if (!(first instanceof Storage)) return this.inert('torch._utils', fn.slice(fn.lastIndexOf('.') + 1), a);
    let storage: Storage = first;
    if (offset === undefined || offset < 0 || !shape || !stride || stride.length !== shape.length) {
      this.fail(`bad ${fn} arguments (offset ${describe(a[1])}, size ${describe(a[2])}, stride ${describe(a[3])})`);
    }
    if (dtypeRef !== undefined) {
      const dt = dtypeRef instanceof GlobalRef ? TORCH_DTYPES[dtypeRef.name] : undefined;
      if (dt && dt !== storage.dtype) {
        const src = storage;
        const numel = Math.floor((src.numel * DTYPE_BYTES[src.dtype]) / DTYPE_BYTES[dt]);
        storage = new Storage(src.key, dt, numel, () => src.bytes());
      }
    }
    let numel = 1;
    let maxIndex = offset;
    for (let i = 0; i < shape.length; i++) {
      numel *= shape[i];
      maxIndex += (shape[i] - 1) * stride[i];
    }
    if (!Number.isSafeInteger(numel) || !Number.isSafeInteger(maxIndex)) this.fail(`${fn}: view size [${shape}] has an impossible element count`);
    if (numel > storage.numel && numel > PICKLE_LIMITS.maxBroadcastElements) {
      this.fail(
        `${fn}: view of ${numel} elements (size [${shape}], stride [${stride}]) over storage ${storage.key} of ${storage.numel} elements exceeds the broadcast limit of ${PICKLE_LIMITS.maxBroadcastElements}`,
      );
    }
    if (numel > 0 && maxIndex >= storage.numel) {
      this.fail(`${fn}: view (offset ${offset}, size [${shape}], stride [${stride}]) exceeds storage ${storage.key} of ${storage.numel} elements`);
    }
    return new Tensor(storage.dtype, shape, stride, offset, storage, requiresGrad);
  }

  withGrad(a: PyValue[], fn: string): PyValue {
    const t = a[0];
    if (!(t instanceof Tensor)) return this.inert('torch._utils', fn.slice(fn.lastIndexOf('.') + 1), a);
    return new Tensor(t.dtype, t.shape, t.stride, t.storageOffset, t.storage, a[1] === true);
  }

  numpyScalar(a: PyValue[]): PyValue {
    const [dtype, data] = a;
    const raw = data === undefined ? undefined : bytesOf(data);
    if (!(dtype instanceof NumpyDType) || !raw) return this.inert('numpy.core.multiarray', 'scalar', a);
    const dt = NUMPY_DTYPES[dtype.descr];
    if (!dt || raw.length !== DTYPE_BYTES[dt]) return this.inert('numpy.core.multiarray', 'scalar', a);
    const b = dtype.byteorder === '>' ? byteswap(raw, raw.length) : raw;
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    let v: number | bigint | boolean;
    switch (dt) {
      case 'float64': v = view.getFloat64(0, true); break;
      case 'float32': v = view.getFloat32(0, true); break;
      case 'float16': v = halfToFloat(view.getUint16(0, true)); break;
      case 'int64': v = intValue(view.getBigInt64(0, true)) as number | bigint; break;
      case 'int32': v = view.getInt32(0, true); break;
      case 'int16': v = view.getInt16(0, true); break;
      case 'int8': v = view.getInt8(0); break;
      case 'uint8': v = view.getUint8(0); break;
      case 'bool': v = view.getUint8(0) !== 0; break;
      default: return this.inert('numpy.core.multiarray', 'scalar', a);
    }
    return this.opts.keepNumpyScalars ? new NumpyScalar(dt, v) : v;
  }

  /** Protocol-5 numpy arrays: `_frombuffer(buffer, dtype, shape, order)`. */
  numpyFromBuffer(a: PyValue[]): PyValue {
    const [buf, dtype, shape, order] = a;
    const built = this.numpyArray(new NdArrayPending(), PyTuple.of<PyValue>(1, shape, dtype, order === 'F', buf));
    return built instanceof Tensor ? built : this.inert('numpy.core.numeric', '_frombuffer', a);
  }

  /** BUILD state of an ndarray: (version, shape, dtype, is_fortran, rawdata). */
  private numpyArray(pending: NdArrayPending, state: PyValue): PyValue {
    pending.state = state;
    if (!Array.isArray(state) || state.length < 5) return pending;
    const [, shapeV, dtype, fortran, rawV] = state;
    const shape = intList(shapeV);
    const raw = bytesOf(rawV);
    if (!shape || !(dtype instanceof NumpyDType) || !raw) return pending;
    const dt = NUMPY_DTYPES[dtype.descr];
    if (!dt) return pending;
    const numel = shape.reduce((x, y) => x * y, 1);
    if (raw.length !== numel * DTYPE_BYTES[dt]) return pending;
    const bytes = dtype.byteorder === '>' && DTYPE_BYTES[dt] > 1 ? byteswap(raw, DTYPE_BYTES[dt]) : raw;
    let stride = contiguousStride(shape);
    if (fortran === true) {
      stride = new Array<number>(shape.length);
      let s = 1;
      for (let i = 0; i < shape.length; i++) {
        stride[i] = s;
        s *= shape[i];
      }
    }
    return new Tensor(dt, shape, stride, 0, Storage.fromBytes('numpy', dt, bytes));
  }
}

/** Decodes the numbers of `MARK <numbers> APPENDS` batches in buf[from, to) into `out`. */
function fillNumbers(out: PyValue[] | Float64Array, buf: Uint8Array, dv: DataView, from: number, to: number, boxFloats = false): void {
  let k = 0;
  let p = from;
  while (p < to) {
    const o = buf[p];
    if (o === 0x4b) {
      out[k++] = buf[p + 1];
      p += 2;
    } else if (o === 0x47) {
      const v = dv.getFloat64(p + 1, false);
      out[k++] = boxFloats && Number.isInteger(v) ? (new PyFloat(v) as unknown as number) : v;
      p += 9;
    } else if (o === 0x4d) {
      out[k++] = buf[p + 1] | (buf[p + 2] << 8);
      p += 3;
    } else if (o === 0x4a) {
      out[k++] = buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24);
      p += 5;
    } else p++; // the MARK and APPENDS between batches
  }
}

function isScalar(v: PyValue): boolean {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean';
}

function describe(v: unknown): string {
  if (v === null) return 'None';
  if (v === undefined) return 'missing value';
  if (Array.isArray(v)) return isPyTuple(v) ? 'tuple' : 'list';
  if (v instanceof PyObject) return `${v.module}.${v.name}`;
  if (typeof v === 'object') return v.constructor?.name ?? 'object';
  return typeof v;
}

function opcodeList(seen: Uint8Array): string[] {
  const out: string[] = [];
  for (let i = 0; i < 256; i++) if (seen[i]) out.push(opcodeName(i));
  return out.sort();
}

function unescapePy(s: string): string {
  return s.replace(/\\(x[0-9a-fA-F]{2}|[\\'"nrt0])/g, (_, e: string) => {
    if (e[0] === 'x') return String.fromCharCode(parseInt(e.slice(1), 16));
    return ({ n: '\n', r: '\r', t: '\t', '0': '\0' } as Record<string, string>)[e] ?? e;
  });
}

export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

/** Decodes a whole pickle held in memory. */
export function unpickle(bytes: Uint8Array, opts: UnpickleOptions): PickleResult {
  return new Unpickler(bytes, opts).run();
}

/** Decodes a pickle read through a window from a synchronous source (for pickles beyond one buffer). */
export function unpickleSource(source: PickleSource, opts: UnpickleOptions, windowBytes = DEFAULT_WINDOW): PickleResult {
  return new Unpickler(source, opts, windowBytes).run();
}
