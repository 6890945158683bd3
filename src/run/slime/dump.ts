// Reads one slime debug rollout dump (`torch.save({"rollout_id", "samples": [Sample.to_dict()...]})`)
// into plain sample records. Decoding never executes anything; a file that is not such a dump is a
// SlimeDumpError naming the file.
import { basename } from 'node:path';
import { PickleError, TorchFormatError } from '../../formats/torch/errors.ts';
import { advanceFor, startTorchDecode, type TorchDecode, type TorchFile } from '../../formats/torch/load.ts';
import { readTensorNumbers } from '../../formats/torch/tensorData.ts';
import { isPyTuple, NumpyScalar, PyEnum, PyFloat, PyObject, PyTuple, Storage, Tensor, type PyValue } from '../../formats/torch/value.ts';
import { ZipError } from '../../formats/zip.ts';
import { SlimeDumpError } from '../errors.ts';
import { pendingSamples } from '../miles/sampleText.ts';
import { numpyStr, Opaque, pyNumber, sampleKeyOf, type SlimeSample, type SlimeValue } from './sample.ts';
import { checkpointGlobal } from '../../formats/torch/globals.ts';

export { SlimeDumpError };

export interface SlimeDump {
  file: string;
  /** From the dump's `rollout_id`, else from the file name. */
  rolloutId: number;
  evaluation: boolean;
  samples: SlimeSample[];
  /** Things a reader should know (a bare list instead of the dict slime writes). */
  warnings: string[];
}

/** Globals a slime rollout dump may name: a checkpoint's, and slime's own data classes (recorded inertly). */
const SLIME_GLOBALS = [/^slime\.[\w.]+$/];

export function allowedGlobal(name: string): boolean {
  return checkpointGlobal(name, SLIME_GLOBALS);
}

/** `rollout_data/3.pt` → 3; `rollout_eval_0.pt` → eval 0; null when the name holds no id. */
export function rolloutIdFromName(file: string): { id: number; evaluation: boolean } | null {
  const m = /(?:^|[^0-9])(eval_)?(\d+)\.pt$/.exec(basename(file)) ?? /^(eval_)?(\d+)\.pt$/.exec(basename(file));
  if (!m) return null;
  return { id: Number(m[2]), evaluation: m[1] !== undefined };
}

export interface ReadDumpOptions {
  /** Display name used in errors instead of the absolute path (a path relative to the run). */
  name?: string;
}

export async function readSlimeDump(path: string, opts: ReadDumpOptions = {}): Promise<SlimeDump> {
  for await (const part of streamSlimeDump(path, opts)) if (part.dump) return part.dump;
  throw new SlimeDumpError(opts.name ?? path, 'the dump ended without its samples');
}

/** A hand-out of a dump read in slices: samples that follow the ones handed out before; the last carries the dump. */
export interface SlimeDumpPart {
  samples: SlimeSample[];
  dump?: SlimeDump;
}

/** Decoding done between two hand-outs of a streamed dump's finished samples (ms): short first, doubling to the longest. */
const DUMP_SLICE_MS = { first: 8, longest: 64 };

/**
 * Reads a dump a slice of decoding at a time (the event loop is served between slices), handing out its
 * samples as soon as they are decoded, in order; the last part carries the whole dump. A pickle naming a
 * global a slime dump never holds is refused before any sample built after it is handed out.
 */
export async function* streamSlimeDump(path: string, opts: ReadDumpOptions = {}): AsyncGenerator<SlimeDumpPart> {
  const name = opts.name ?? path;
  const evaluation = rolloutIdFromName(path)?.evaluation ?? false;
  let decode: TorchDecode;
  try {
    decode = await startTorchDecode(path, { boxIntegralFloats: true, keepNumpyScalars: true });
  } catch (err) {
    throw dumpFailure(err, name, path);
  }
  // The samples handed out so far (as decoded, and as converted).
  const raw: PyValue[] = [];
  const samples: SlimeSample[] = [];
  const convert = async (list: readonly PyValue[]): Promise<SlimeSample[]> => {
    const fresh: SlimeSample[] = [];
    for (let row = raw.length; row < list.length; row++) {
      raw.push(list[row]);
      const sample = await slimeSample(list[row], row, name, evaluation);
      samples.push(sample);
      fresh.push(sample);
    }
    return fresh;
  };
  let sliceMs = DUMP_SLICE_MS.first;
  try {
    for (;;) {
      let file: TorchFile | null;
      try {
        file = advanceFor(decode, sliceMs);
        sliceMs = Math.min(2 * sliceMs, DUMP_SLICE_MS.longest);
      } catch (err) {
        throw dumpFailure(err, name, path);
      }
      refuseForeign(file ? file.globals : decode.globalsSoFar(), name);
      if (!file) {
        const fresh = await convert(pendingSamples(decode.pending()));
        if (fresh.length > 0) yield { samples: fresh };
        await new Promise((r) => setImmediate(r));
        continue;
      }
      const { list, rolloutId, warnings } = dumpList(file.value, name, path);
      if (raw.some((v, i) => list[i] !== v)) throw new SlimeDumpError(name, 'the samples list changed while it was decoded');
      const fresh = await convert(list);
      if (rolloutId === undefined) throw new SlimeDumpError(name, 'no rollout_id in the dump and none in the file name');
      yield { samples: fresh, dump: { file: name, rolloutId, evaluation, samples, warnings } };
      return;
    }
  } finally {
    await decode.close();
  }
}

function dumpFailure(err: unknown, name: string, path: string): unknown {
  if (err instanceof PickleError || err instanceof TorchFormatError || err instanceof ZipError) {
    return new SlimeDumpError(name, `not a readable torch dump: ${stripFile(err.message, path)}`);
  }
  if ((err as NodeJS.ErrnoException)?.code === 'ENOENT') return new SlimeDumpError(name, 'no such file');
  if ((err as NodeJS.ErrnoException)?.code === 'EISDIR') return new SlimeDumpError(name, 'is a directory, not a .pt file');
  return err;
}

function refuseForeign(globals: string[], name: string): void {
  const foreign = globals.filter((g) => !allowedGlobal(g));
  if (foreign.length > 0) {
    throw new SlimeDumpError(
      name,
      `the pickle names ${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ` and ${foreign.length - 3} more` : ''}, which a slime rollout dump never holds; refused (nothing was executed)`,
    );
  }
}

/** The samples list of a decoded dump, its rollout id (if it or the file name has one) and what a reader should know about its layout. */
function dumpList(value: PyValue, name: string, path: string): { list: PyValue[]; rolloutId: number | undefined; warnings: string[] } {
  const warnings: string[] = [];
  const fromName = rolloutIdFromName(path);
  let list: PyValue;
  let rolloutId: number | undefined;
  if (Array.isArray(value) && !isPyTuple(value)) {
    // slime's own viewer accepts a bare list of samples; so do we, with the id taken from the name.
    list = value;
    warnings.push(`${name}: a bare list of samples, not the {rollout_id, samples} dict slime writes; rollout id taken from the file name`);
  } else {
    const top = plainObject(value);
    if (!top) throw new SlimeDumpError(name, `expected the dict slime writes ({"rollout_id": int, "samples": [...]}), found ${describe(value)}`);
    if (!('samples' in top)) throw new SlimeDumpError(name, `the dump dict has no "samples" key (keys: ${Object.keys(top).slice(0, 8).join(', ')})`);
    list = top.samples;
    rolloutId = typeof top.rollout_id === 'number' && Number.isInteger(top.rollout_id) ? top.rollout_id : undefined;
  }
  if (!Array.isArray(list)) throw new SlimeDumpError(name, `"samples" is ${describe(list)}, not a list`);
  return { list, rolloutId: rolloutId ?? fromName?.id, warnings };
}

/** One `Sample.to_dict()` of the list, at `row`. */
async function slimeSample(v: PyValue, row: number, name: string, evaluation: boolean): Promise<SlimeSample> {
  const raw = plainObject(v);
  if (!raw) throw new SlimeDumpError(name, `samples[${row}] is ${describe(v)}, not a Sample.to_dict() dict`);
  const fields: { [key: string]: SlimeValue } = {};
  for (const [k, x] of Object.entries(raw)) setField(fields, k, toSlimeValue(x));
  return { row, key: sampleKeyOf(fields, row, evaluation), fields, topPOffsets: await offsetsOf(fields.rollout_top_p_token_offsets, name, row) };
}

async function offsetsOf(v: SlimeValue | undefined, file: string, row: number): Promise<number[] | null> {
  if (v instanceof Tensor) {
    try {
      return Array.from(await readTensorNumbers(v));
    } catch (err) {
      throw new SlimeDumpError(file, `samples[${row}].rollout_top_p_token_offsets: ${(err as Error).message}`);
    }
  }
  if (Array.isArray(v)) return v.map((x) => pyNumber(x) ?? 0);
  return null;
}

function stripFile(message: string, path: string): string {
  return message.split(`${path}: `).join('').split(path).join(basename(path));
}

function plainObject(v: PyValue): { [key: string]: PyValue } | null {
  if (v instanceof Map) {
    const o: { [key: string]: PyValue } = {};
    for (const [k, x] of v) {
      const key = pyKey(k);
      if (key === '__proto__') Object.defineProperty(o, key, { value: x, enumerable: true, writable: true, configurable: true });
      else o[key] = x;
    }
    return o;
  }
  if (typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype) return v as { [key: string]: PyValue };
  return null;
}

function pyKey(k: PyValue): string {
  if (typeof k === 'string') return k;
  if (k === null) return 'None';
  if (typeof k === 'boolean') return k ? 'True' : 'False';
  if (typeof k === 'number' || typeof k === 'bigint') return String(k);
  if (k instanceof PyFloat) return `${k.value}.0`;
  if (k instanceof NumpyScalar) return numpyStr(k);
  return describe(k);
}

function toSlimeValue(v: PyValue): SlimeValue {
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'bigint' || typeof v === 'string') return v;
  if (v instanceof PyFloat || v instanceof Tensor || v instanceof NumpyScalar) return v;
  if (Array.isArray(v) || v instanceof PyTuple) return (v as PyValue[]).map(toSlimeValue);
  if (v instanceof Int32Array || v instanceof Float64Array) return Array.from(v);
  if (v instanceof Set) return [...v].map(toSlimeValue);
  if (v instanceof PyEnum) return v.value === undefined ? new Opaque(`${v.name}.${v.member ?? ''}`) : toSlimeValue(v.value as PyValue);
  if (v instanceof Uint8Array) return new Opaque(`b'<${v.length} bytes>'`);
  if (v instanceof Storage) return new Opaque(`<storage ${v.dtype}[${v.numel}]>`);
  if (v instanceof PyObject) return new Opaque(`<${v.module}.${v.name} object>`);
  const o = plainObject(v);
  if (o) {
    const out: { [key: string]: SlimeValue } = {};
    for (const [k, x] of Object.entries(o)) setField(out, k, toSlimeValue(x));
    return out;
  }
  return new Opaque(String(v));
}

/** A dumped dict may hold any key, `__proto__` included: set it as data, never as the prototype. */
function setField(o: { [key: string]: SlimeValue }, k: string, v: SlimeValue): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

function describe(v: PyValue): string {
  if (v === null) return 'None';
  if (Array.isArray(v)) return isPyTuple(v) ? `a tuple of ${v.length}` : `a list of ${v.length}`;
  if (v instanceof PyObject) return `an object of ${v.module}.${v.name}`;
  if (v instanceof Tensor) return `a ${v.dtype} tensor`;
  if (v instanceof Map) return 'a dict with non-string keys';
  if (v instanceof PyFloat) return 'a float';
  return `a ${typeof v}`;
}
