// Growth of the typed columns that telemetry blocks keep their rows in.

export type Column = Float64Array | Uint32Array | Int32Array | Uint16Array | Uint8Array;

/** A new column of `col`'s type with room for `capacity` values, holding `col`'s first `n`. */
export function resized<T extends Column>(col: T, n: number, capacity: number): T {
  const out = new (col.constructor as new (length: number) => T)(capacity);
  out.set(col.subarray(0, n));
  return out;
}
