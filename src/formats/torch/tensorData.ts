// A tensor's elements in row-major order, honouring shape, strides and storage offset.
import { TorchFormatError } from './errors.ts';
import { DTYPE_BYTES, type DType, type Tensor, type TensorData } from './value.ts';
import { halfToFloat, PICKLE_LIMITS } from './unpickle.ts';

/** Plain-number element data: int64 becomes Float64Array (exact up to 2^53), f16/bf16 widen to f32. */
export type TensorNumbers = Float64Array | Float32Array | Int32Array | Int16Array | Int8Array | Uint8Array;

/** Reads the tensor's storage (lazily, once per storage) and returns its elements row-major. */
export async function readTensor(t: Tensor): Promise<TensorData> {
  return tensorDataFromBytes(t, await t.storage.bytes());
}

/** Like readTensor, but int64 comes back as a Float64Array of numbers (token ids, lengths). */
export async function readTensorNumbers(t: Tensor): Promise<TensorNumbers> {
  return tensorNumbersFromBytes(t, await t.storage.bytes());
}

/**
 * The row-major elements of `t` given its storage bytes. A contiguous, aligned view of a
 * non-widened dtype shares memory with `storageBytes` (zero copy).
 */
export function tensorDataFromBytes(t: Tensor, storageBytes: Uint8Array): TensorData {
  const raw = rowMajorBytes(t, storageBytes);
  switch (t.dtype) {
    case 'float64': return new Float64Array(raw.buffer, raw.byteOffset, raw.byteLength / 8);
    case 'float32': return new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
    case 'float16': return widenHalf(raw);
    case 'bfloat16': return widenBFloat16(raw);
    case 'int64': return new BigInt64Array(raw.buffer, raw.byteOffset, raw.byteLength / 8);
    case 'int32': return new Int32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
    case 'int16': return new Int16Array(raw.buffer, raw.byteOffset, raw.byteLength / 2);
    case 'int8': return new Int8Array(raw.buffer, raw.byteOffset, raw.byteLength);
    case 'uint8':
    case 'bool':
      return raw;
  }
}

export function tensorNumbersFromBytes(t: Tensor, storageBytes: Uint8Array): TensorNumbers {
  if (t.dtype !== 'int64') return tensorDataFromBytes(t, storageBytes) as TensorNumbers;
  const raw = rowMajorBytes(t, storageBytes);
  const words = new Int32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
  const out = new Float64Array(words.length / 2);
  for (let i = 0, j = 0; i < out.length; i++, j += 2) out[i] = (words[j] >>> 0) + words[j + 1] * 4294967296;
  return out;
}

function isContiguous(shape: number[], stride: number[]): boolean {
  let expected = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] !== 1 && stride[i] !== expected) return false;
    expected *= shape[i];
  }
  return true;
}

/**
 * The tensor's elements as raw little-endian bytes, row-major, aligned to the element width:
 * a subarray of the storage when possible, else a gathered copy.
 */
function rowMajorBytes(t: Tensor, storageBytes: Uint8Array): Uint8Array {
  const w = DTYPE_BYTES[t.dtype];
  const { shape, stride, storageOffset } = t;
  let numel = 1;
  let maxIndex = storageOffset;
  for (let i = 0; i < shape.length; i++) {
    numel *= shape[i];
    maxIndex += (shape[i] - 1) * stride[i];
  }
  if (numel === 0) return new Uint8Array(0);
  const have = Math.floor(storageBytes.byteLength / w);
  // Checked before the gather allocates: a stride-0 view must not expand a few bytes into gigabytes.
  if (!Number.isSafeInteger(numel) || (numel > have && numel > PICKLE_LIMITS.maxBroadcastElements)) {
    throw new TorchFormatError(
      t.storage.source || `storage ${t.storage.key}`,
      `tensor view of ${numel} elements (size [${shape}], stride [${stride}]) over storage ${t.storage.key} of ${have} elements exceeds the broadcast limit of ${PICKLE_LIMITS.maxBroadcastElements}`,
    );
  }
  if (maxIndex >= have || storageOffset < 0) {
    throw new TorchFormatError(
      t.storage.source || `storage ${t.storage.key}`,
      `tensor view (offset ${storageOffset}, size [${shape}], stride [${stride}]) needs ${maxIndex + 1} ${t.dtype} elements, storage ${t.storage.key} holds ${have}`,
    );
  }
  if (isContiguous(shape, stride)) {
    const view = storageBytes.subarray(storageOffset * w, (storageOffset + numel) * w);
    return view.byteOffset % w === 0 ? view : view.slice();
  }
  const src = storageBytes.byteOffset % w === 0 ? storageBytes : storageBytes.slice();
  const out = new Uint8Array(numel * w);
  gather(src, out, w, shape, stride, storageOffset);
  return out;
}

function gather(src: Uint8Array, out: Uint8Array, w: number, shape: number[], stride: number[], offset: number): void {
  const unit = w === 8 ? 4 : w;
  const k = w === 8 ? 2 : 1;
  const S = unit === 1 ? src : unit === 2 ? new Uint16Array(src.buffer, src.byteOffset, src.byteLength >> 1) : new Uint32Array(src.buffer, src.byteOffset, src.byteLength >> 2);
  const O = unit === 1 ? out : unit === 2 ? new Uint16Array(out.buffer) : new Uint32Array(out.buffer);
  const nd = shape.length;
  const idx = new Array<number>(nd).fill(0);
  const last = nd - 1;
  const innerN = shape[last];
  const innerS = stride[last];
  let o = 0;
  let base = offset;
  for (;;) {
    for (let i = 0, e = base; i < innerN; i++, e += innerS) {
      if (k === 1) O[o++] = S[e];
      else {
        O[o++] = S[2 * e];
        O[o++] = S[2 * e + 1];
      }
    }
    // Advance the odometer over the outer dimensions.
    let d = last - 1;
    for (; d >= 0; d--) {
      idx[d]++;
      base += stride[d];
      if (idx[d] < shape[d]) break;
      base -= stride[d] * shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

let halfTable: Float32Array | undefined;

function widenHalf(raw: Uint8Array): Float32Array {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfTable[h] = halfToFloat(h);
  }
  const src = new Uint16Array(raw.buffer, raw.byteOffset, raw.byteLength >> 1);
  const out = new Float32Array(src.length);
  const tbl = halfTable;
  for (let i = 0; i < src.length; i++) out[i] = tbl[src[i]];
  return out;
}

function widenBFloat16(raw: Uint8Array): Float32Array {
  const src = new Uint16Array(raw.buffer, raw.byteOffset, raw.byteLength >> 1);
  const bits = new Uint32Array(src.length);
  for (let i = 0; i < src.length; i++) bits[i] = src[i] << 16;
  return new Float32Array(bits.buffer);
}

