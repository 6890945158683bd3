// Typed errors of the torch format layer; each names the file and the problem.

/** A pickle stream that cannot be decoded: unknown opcode, truncated input, stack underflow, bad arguments. */
export class PickleError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
    /** Byte offset of the offending opcode within the pickle, when known. */
    readonly offset = -1,
    /** Name of the offending opcode (e.g. `BINUNICODE`, or `0xfe` when unknown), when known. */
    readonly opcode = '',
  ) {
    super(`${file}: pickle ${opcode ? `opcode ${opcode} ` : ''}${offset >= 0 ? `at offset ${offset}: ` : ''}${problem}`);
    this.name = 'PickleError';
  }
}

/** A torch archive whose layout or tensors are inconsistent (no data.pkl, storage too small, bad view). */
export class TorchFormatError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(`${file}: ${problem}`);
    this.name = 'TorchFormatError';
  }
}
