// Hand-built slime dump parts for tests: numpy scalars pickled as numpy pickles them, and samples whose
// trace holds one request.
import { PyObject, PyTuple } from '../../src/formats/torch/value.ts';

/** A numpy scalar as numpy pickles it: `numpy.core.multiarray.scalar(dtype('<f4'), raw bytes)`. */
export function np(code: 'f4' | 'f8' | 'i8' | 'b1', x: number | boolean): PyObject {
  const raw = new Uint8Array(code === 'b1' ? 1 : code === 'f4' ? 4 : 8);
  const dv = new DataView(raw.buffer);
  if (code === 'f4') dv.setFloat32(0, x as number, true);
  else if (code === 'f8') dv.setFloat64(0, x as number, true);
  else if (code === 'i8') dv.setBigInt64(0, BigInt(x as number), true);
  else dv.setUint8(0, x ? 1 : 0);
  const dtype = new PyObject('numpy', 'dtype', [code, false, true], PyTuple.of<unknown>(3, code === 'b1' ? '|' : '<', null, null, null, -1, -1, 0));
  return new PyObject('numpy.core.multiarray', 'scalar', [dtype, raw]);
}

/** One sample whose trace holds one `sglang_generate` request with these end attrs. */
export function tracedSample(index: number, attrs: Record<string, unknown>) {
  const span = `s${index}`;
  return {
    index,
    group_index: 0,
    status: 'completed',
    response_length: 10,
    trace: {
      version: 1,
      trace_id: `t${index}`,
      attempt: 0,
      events: [
        { type: 'span_start', name: 'sglang_generate', ts: 100 + index, span_id: span, attrs: {} },
        { type: 'span_end', name: 'sglang_generate', ts: 101.5 + index, span_id: span, attrs },
      ],
    },
  };
}
