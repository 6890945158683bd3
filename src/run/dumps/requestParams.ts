// Parsing of the dump endpoints' path and query parameters into typed values (bad text → BadArgument).
import { BadArgument } from './errors.ts';

/** A decimal integer parameter (`"3"`, `"-1"`); anything else, including `"1.5"`, is a bad argument. */
export function parseIntParam(name: string, raw: string): number {
  const text = raw.trim();
  if (!/^[+-]?\d+$/.test(text)) throw new BadArgument(name, `${name} must be an integer, got '${raw}'`);
  const v = Number(text);
  if (!Number.isSafeInteger(v)) throw new BadArgument(name, `${name} is out of range: '${raw}'`);
  return v;
}

const TRUE = new Set(['1', 'true', 't', 'yes', 'y', 'on']);
const FALSE = new Set(['0', 'false', 'f', 'no', 'n', 'off']);

/** A boolean parameter spelled as the reference API accepts it (1/0, true/false, yes/no, on/off, any case). */
export function parseBoolParam(name: string, raw: string): boolean {
  const text = raw.trim().toLowerCase();
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  throw new BadArgument(name, `${name} must be a boolean (true/false, 1/0, yes/no, on/off), got '${raw}'`);
}
