// How the dump reader opens `.pt` files and reads tensor elements, over the torch loader.
import { openTorchFile } from '../../formats/torch/load.ts';
import { readTensorNumbers, type TensorNumbers } from '../../formats/torch/tensorData.ts';
import { Tensor, type PyValue } from '../../formats/torch/value.ts';
import { isList } from './pyFields.ts';
import { milesGlobal } from './globals.ts';

export interface TorchDocument {
  readonly value: PyValue;
  /** Archive root folder (`<root>/data/<key>` holds each storage), when the loader knows it. */
  readonly root?: string;
  readonly byteorder?: 'little' | 'big';
  close(): Promise<void> | void;
}

export type TorchOpener = (path: string) => Promise<TorchDocument>;

/** Opens a `.pt` with the project's torch loader (storages are read lazily, on first use). */
export const openTorchDocument: TorchOpener = (path) => openTorchFile(path, { allowGlobal: milesGlobal });

/** Numeric elements of a 1-D value: a tensor (any dtype, strides honoured, 64-bit ints widened) or a list of numbers. */
export type Numbers = TensorNumbers;

/** A list of numbers as a decode with `typedLists` gives it. */
export function isTypedList(v: unknown): v is Int32Array | Float64Array {
  return v instanceof Int32Array || v instanceof Float64Array;
}

export async function readNumbers(v: PyValue | undefined): Promise<Numbers | null> {
  if (v === null || v === undefined) return null;
  if (v instanceof Tensor) return readTensorNumbers(v);
  // A copy, as for a plain list: callers may keep or change it.
  if (isTypedList(v)) return Float64Array.from(v);
  if (isList(v)) {
    const out = new Float64Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      out[i] = typeof x === 'number' ? x : typeof x === 'boolean' ? (x ? 1 : 0) : typeof x === 'bigint' ? Number(x) : NaN;
    }
    return out;
  }
  return null;
}

/** Element count of a 1-D value without reading its storage. */
export function lengthOf(v: PyValue | undefined): number | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Tensor) return v.numel;
  if (isList(v) || isTypedList(v)) return v.length;
  return null;
}
