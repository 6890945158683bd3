// Opens a torch.save archive: decodes `<root>/data.pkl` and wires storages to lazy zip reads.
import { ZipArchive, type ZipEntry } from '../zip.ts';
import { TorchFormatError } from './errors.ts';
import { storageDType, Unpickler, type PendingPickle } from './unpickle.ts';
import { DTYPE_BYTES, PyTuple, Storage, type DType, type PyValue } from './value.ts';

/** data.pkl entries up to this size are read in one buffer; bigger ones stream through a window (less peak memory). */
const WHOLE_PICKLE_LIMIT = 64 * 1024 * 1024;

export interface TorchFile {
  readonly path: string;
  /** What `torch.load(weights_only=False)` returns, with tensors as lazy Tensor records. */
  readonly value: PyValue;
  /** The pickle protocol of data.pkl (torch writes 2). */
  readonly protocol: number;
  /** Archive root folder (`<root>/data.pkl`). */
  readonly root: string;
  readonly entries: ZipEntry[];
  readonly byteorder: 'little' | 'big';
  /** `module.name` of every global data.pkl names, in order of first appearance. */
  readonly globals: string[];
  /** Names of the opcodes data.pkl uses, sorted. */
  readonly opcodes: string[];
  /** Every storage the pickle references, by key, in order of first reference. */
  readonly storages: Map<string, Storage>;
  /**
   * Releases the file handle. Storages not yet read stay readable: each later read reopens the
   * file for that one read (and fails with a ZipError if the file changed size meanwhile).
   */
  close(): Promise<void>;
}

export interface OpenTorchOptions {
  /** Window for streaming a data.pkl larger than one buffer (tests use tiny windows). */
  pickleWindowBytes?: number;
  /** data.pkl size above which it streams instead of being read whole. */
  wholePickleLimit?: number;
  /** Files up to this size are read whole at open and need no handle afterwards (default 1 MiB). */
  wholeFileBelow?: number;
  /** Numeric lists as Int32Array/Float64Array (see UnpickleOptions.typedLists). */
  typedLists?: boolean;
  /** Integral floats as PyFloat (see UnpickleOptions.boxIntegralFloats). */
  boxIntegralFloats?: boolean;
  /** numpy scalars as NumpyScalar with their dtype (see UnpickleOptions.keepNumpyScalars). */
  keepNumpyScalars?: boolean;
  /** Number lists kept only as their length (see UnpickleOptions.lengthOnlyUnder). */
  lengthOnlyUnder?: ReadonlySet<string>;
  /** Long strings under these keys left undecoded (see UnpickleOptions.unreadTextUnder). */
  unreadTextUnder?: ReadonlySet<string>;
  /** The globals the file may name; others are refused (see UnpickleOptions.allowGlobal). */
  allowGlobal?: (name: string) => boolean;
}

/**
 * Opens a `.pt` written by torch.save (zip format) and decodes its pickle. A small file (≤ 1 MiB) is
 * read whole and holds no handle; a bigger one keeps its handle until `close()`. Tensor storages are
 * read only when `readTensor` (or `Storage.bytes()`) asks.
 */
export async function openTorchFile(path: string, opts: OpenTorchOptions = {}): Promise<TorchFile> {
  return openTorchArchive(await ZipArchive.open(path, { wholeFileBelow: opts.wholeFileBelow }), opts);
}

/**
 * Decodes an already opened torch archive (closed on failure). A storage read from an archive held in
 * memory is copied out, so a kept tensor never pins the whole file.
 */
export async function openTorchArchive(archive: ZipArchive, opts: Omit<OpenTorchOptions, 'wholeFileBelow'> = {}): Promise<TorchFile> {
  const decoding = await startTorchArchiveDecode(archive, opts);
  try {
    return decoding.advance(Infinity)!;
  } catch (err) {
    await archive.close();
    throw err;
  }
}

/** A torch file whose pickle is decoded a slice at a time (what is built so far can be looked at between slices). */
export interface TorchDecode {
  readonly path: string;
  /** Decodes at most `budget` more opcodes: the finished file, or null while more remains. */
  advance(budget: number): TorchFile | null;
  /** The unfinished pickle (see Unpickler.pending). */
  pending(): PendingPickle;
  /** `module.name` of every global the pickle named so far. */
  globalsSoFar(): string[];
  close(): Promise<void>;
}

/** Opcodes decoded between two looks at the clock in `advanceFor`. */
const OPCODES_PER_CLOCK_READ = 4096;

/** Advances a decode by about `ms` of work: the finished file, or null while more remains. */
export function advanceFor(decode: TorchDecode, ms: number): TorchFile | null {
  const until = performance.now() + ms;
  for (;;) {
    const file = decode.advance(OPCODES_PER_CLOCK_READ);
    if (file || performance.now() >= until) return file;
  }
}

/** Opens a `.pt` for a decode in slices (`advance`); the caller closes it (also when it stops early). */
export async function startTorchDecode(path: string, opts: OpenTorchOptions = {}): Promise<TorchDecode> {
  return startTorchArchiveDecode(await ZipArchive.open(path, { wholeFileBelow: opts.wholeFileBelow }), opts);
}

async function startTorchArchiveDecode(archive: ZipArchive, opts: Omit<OpenTorchOptions, 'wholeFileBelow'>): Promise<TorchDecode> {
  const path = archive.path;
  try {
    const pkl = findDataPkl(archive.entries);
    if (!pkl) throw new TorchFormatError(path, 'not a torch archive: no <root>/data.pkl entry');
    const root = pkl.name.slice(0, pkl.name.length - 'data.pkl'.length).replace(/\/$/, '');
    const prefix = root ? `${root}/` : '';
    let byteorder: 'little' | 'big' = 'little';
    const bo = archive.entry(`${prefix}byteorder`);
    if (bo) {
      const text = new TextDecoder().decode(await archive.read(bo)).trim();
      if (text !== 'little' && text !== 'big') throw new TorchFormatError(path, `unknown byteorder record ${JSON.stringify(text.slice(0, 20))}`);
      byteorder = text;
    }

    const storages = new Map<string, Storage>();
    const persistentLoad = (pid: PyValue): PyValue => {
      if (!Array.isArray(pid) || pid.length < 5 || pid[0] !== 'storage') {
        throw new TorchFormatError(path, `unknown persistent id ${describePid(pid)}`);
      }
      const [, typeRef, keyV, , numelV] = pid;
      const key = typeof keyV === 'string' ? keyV : typeof keyV === 'number' ? String(keyV) : undefined;
      const dtype = storageDType(typeRef);
      if (key === undefined) throw new TorchFormatError(path, `storage persistent id with a bad key ${describePid(pid)}`);
      if (!dtype) throw new TorchFormatError(path, `storage ${key} has an unsupported storage type ${describePid(typeRef)}`);
      if (typeof numelV !== 'number' || !Number.isSafeInteger(numelV) || numelV < 0) {
        throw new TorchFormatError(path, `storage ${key} has an impossible element count ${String(numelV)}`);
      }
      const known = storages.get(key);
      if (known) return known;
      const entryName = `${prefix}data/${key}`;
      const entry = archive.entry(entryName);
      const width = DTYPE_BYTES[dtype];
      if (!entry) throw new TorchFormatError(path, `storage ${key} has no entry ${entryName}`);
      if (entry.size < numelV * width) {
        throw new TorchFormatError(path, `storage ${key} claims ${numelV} ${dtype} elements (${numelV * width} bytes) but ${entryName} holds ${entry.size} bytes`);
      }
      // An inline (unnamed) loader: one per storage, so it must not pay for a name.
      const s = new Storage(key, dtype, numelV, () => loadStorage(archive, entry, numelV * width, width, byteorder), path);
      storages.set(key, s);
      return s;
    };

    const unpickleOpts = { file: path, persistentLoad, typedLists: opts.typedLists, boxIntegralFloats: opts.boxIntegralFloats, keepNumpyScalars: opts.keepNumpyScalars, lengthOnlyUnder: opts.lengthOnlyUnder, unreadTextUnder: opts.unreadTextUnder, allowGlobal: opts.allowGlobal };
    let unpickler: Unpickler;
    const limit = opts.wholePickleLimit ?? WHOLE_PICKLE_LIMIT;
    if (pkl.size <= limit) {
      unpickler = new Unpickler(await archive.read(pkl), unpickleOpts);
    } else {
      if (pkl.method !== 0) await archive.read(pkl); // raises the clear "compressed entry" error
      const start = await archive.dataStart(pkl);
      unpickler = new Unpickler(
        { size: pkl.size, read: (position, into, offset, length) => archive.readSyncAt(start + position, into, offset, length) },
        unpickleOpts,
        opts.pickleWindowBytes,
      );
    }
    return {
      path,
      advance(budget: number): TorchFile | null {
        const result = unpickler.advance(budget);
        if (!result) return null;
        return {
          path,
          value: result.value,
          protocol: result.protocol,
          root,
          entries: archive.entries,
          byteorder,
          globals: result.globals,
          opcodes: result.opcodes,
          storages,
          close: () => archive.close(),
        };
      },
      pending: () => unpickler.pending(),
      globalsSoFar: () => unpickler.globalsSoFar(),
      close: () => archive.close(),
    };
  } catch (err) {
    await archive.close();
    throw err;
  }
}

/** Opens, decodes and closes: the value's storages remain readable (each read reopens the file). */
export async function loadTorch(path: string, opts: OpenTorchOptions = {}): Promise<PyValue> {
  const f = await openTorchFile(path, opts);
  await f.close();
  return f.value;
}

export function findDataPkl(entries: readonly ZipEntry[]): ZipEntry | undefined {
  // torch takes the archive root from the first record; prefer `<that root>/data.pkl`.
  const first = entries[0]?.name ?? '';
  const firstRoot = first.includes('/') ? first.slice(0, first.indexOf('/')) : '';
  let fallback: ZipEntry | undefined;
  for (const e of entries) {
    if (e.name === `${firstRoot}/data.pkl`) return e;
    if (!fallback && (e.name === 'data.pkl' || /^[^/]+\/data\.pkl$/.test(e.name))) fallback = e;
  }
  return fallback;
}

async function loadStorage(
  archive: ZipArchive,
  entry: ZipEntry,
  nbytes: number,
  width: number,
  byteorder: 'little' | 'big',
): Promise<Uint8Array> {
  // Whether the read is served from held memory is settled when it starts (the memory may be released meanwhile).
  const fromMemory = archive.inMemory;
  const bytes = ordered(await archive.read(entry), nbytes, width, byteorder);
  return fromMemory || archive.inMemory ? bytes.slice() : bytes;
}

function ordered(raw: Uint8Array, nbytes: number, width: number, byteorder: 'little' | 'big'): Uint8Array {
  const bytes = raw.subarray(0, nbytes);
  if (byteorder === 'little' || width === 1) return bytes;
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i + width <= bytes.length; i += width) for (let k = 0; k < width; k++) out[i + k] = bytes[i + width - 1 - k];
  return out;
}

function describePid(v: PyValue): string {
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? String(x) : x instanceof PyTuple ? [...x] : x))?.slice(0, 120) ?? String(v);
  } catch {
    return String(v);
  }
}

export type { DType };
