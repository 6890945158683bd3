// Query and path parameters, validated with zod at the edge; every failure is a 400 naming the parameter.
import { z } from 'zod';
import { pyFixed, pyRepr } from '../queries/pythonFormat.ts';

/** A request argument that cannot be used (HTTP 400). */
export class ParamError extends Error {
  override readonly name = 'ParamError';
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

export const MAX_WINDOW_S = 14400;

const FLOAT_RE = /^[+-]?(\d+(_\d+)*\.?(\d+(_\d+)*)?|\.\d+(_\d+)*)([eE][+-]?\d+)?$/;
const INT_RE = /^[+-]?\d+(_\d+)*$/;
const TRUE_WORDS = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

function quoted(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
}

/** A finite float, as Python's `float()` reads it (no inf/nan: they cannot bound a window). */
export const floatParam = z.string().transform((raw, ctx) => {
  const s = raw.trim();
  if (!FLOAT_RE.test(s)) {
    ctx.addIssue({ code: 'custom', message: `expected a finite number, got ${quoted(raw)}` });
    return z.NEVER;
  }
  return Number(s.replaceAll('_', ''));
});

/** An integer in the safe range. */
export const intParam = z.string().transform((raw, ctx) => {
  const s = raw.trim();
  const v = INT_RE.test(s) ? Number(s.replaceAll('_', '')) : Number.NaN;
  if (!Number.isSafeInteger(v)) {
    ctx.addIssue({ code: 'custom', message: `expected an integer, got ${quoted(raw)}` });
    return z.NEVER;
  }
  return v;
});

/** A boolean as pydantic coerces query strings: 1/0, true/false, yes/no, on/off, t/f, y/n. */
export const boolParam = z.string().transform((raw, ctx) => {
  const s = raw.trim().toLowerCase();
  if (TRUE_WORDS.has(s)) return true;
  if (FALSE_WORDS.has(s)) return false;
  ctx.addIssue({ code: 'custom', message: `expected a boolean (true/false, 1/0, yes/no, on/off), got ${quoted(raw)}` });
  return z.NEVER;
});

/** Parses `input` (query or path record) with `schema`; the first issue becomes a ParamError naming its key. */
export function parseParams<S extends z.ZodType>(schema: S, input: Record<string, string | undefined>): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const param = String(issue.path[0] ?? 'query');
  const message = issue.code === 'invalid_type' && input[param] === undefined ? 'is required' : issue.message;
  throw new ParamError(param, `${param}: ${message}`);
}

export const windowShape = { t0: floatParam.optional(), t1: floatParam.optional() };

/** The reference's window rule, applied only when both bounds are given. */
export function checkWindow(t0: number | undefined, t1: number | undefined): void {
  if (t0 === undefined || t1 === undefined) return;
  if (t1 <= t0) throw new ParamError('t1', `bad window: t1=${pyRepr(t1)} <= t0=${pyRepr(t0)}`);
  if (t1 - t0 > MAX_WINDOW_S) {
    throw new ParamError('t1', `window ${pyFixed(t1 - t0, 0)}s exceeds max_window_s ${MAX_WINDOW_S}`);
  }
}

export function checkRange(param: string, value: number, lo: number, hi: number): void {
  if (value < lo || value > hi) throw new ParamError(param, `${param}=${value} out of range [${lo}, ${hi}]`);
}

export function checkAtLeast(param: string, value: number, lo: number): void {
  if (value < lo) throw new ParamError(param, `${param}=${value} must be >= ${lo}`);
}
