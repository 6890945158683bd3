// Steps beyond 2^53 (a TensorBoard global step, a metrics line's digits): JSON numbers and protobuf int64s this
// large are read as the nearest double. Every reader says so once, in the same words.

/** Whether `step` is a step read as it was written (not one rounded to the nearest double). */
export function isExactStep(step: number | null): boolean {
  return step === null || !Number.isInteger(step) || Number.isSafeInteger(step);
}

/** What a reader says, once per file, of the first step it rounded (`written`: its digits, when they differ). */
export function roundedStepNote(readAs: number, written: string | bigint = String(readAs)): string {
  return `step ${written} is beyond 2^53, read as ${String(written) === String(readAs) ? 'the nearest double' : readAs} (steps this large are rounded; later ones are not reported)`;
}
