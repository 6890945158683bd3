// Query and path parameters, validated with zod at the edge from the limits the queries export; every
// failure is a BadArgument (400) naming the parameter.
import type { MiddlewareHandler } from 'hono';
import * as z from 'zod';
import { type IntLimit, limitProblem, windowProblem } from '../queries/limits.ts';
import { BadArgument } from '../queries/limits.ts';

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
  const v = FLOAT_RE.test(s) ? Number(s.replaceAll('_', '')) : Number.NaN;
  // (`1e400` is written as a number but holds none: it would be infinite)
  if (!Number.isFinite(v)) {
    ctx.addIssue({ code: 'custom', message: `expected a finite number, got ${quoted(raw)}` });
    return z.NEVER;
  }
  return v;
});

/**
 * Refuses a query parameter given more than once (`t0=1&t0=2`): each parameter takes one value, and which
 * of two the answer used would be a guess (the reference's framework takes the last, ours would the first).
 */
export const oneValueEach: MiddlewareHandler = async (c, next) => {
  for (const [key, values] of Object.entries(c.req.queries())) if (values.length > 1) throw new BadArgument(key, `${key}: given ${values.length} times; give it once`);
  await next();
};

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

/** Parses `input` (query or path record) with `schema`; the first issue becomes a BadArgument naming its key. */
export function parseParams<S extends z.ZodType>(schema: S, input: Record<string, string | undefined>): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const param = String(issue.path[0] ?? 'query');
  // The queries' own rules word their whole message (as the reference does); parse failures are prefixed.
  if (issue.code === 'custom' && (issue as { params?: { whole?: boolean } }).params?.whole) throw new BadArgument(param, issue.message);
  const message = issue.code === 'invalid_type' && input[param] === undefined ? 'is required' : issue.message;
  throw new BadArgument(param, `${param}: ${message}`);
}

export const windowShape = { t0: floatParam.optional(), t1: floatParam.optional() };

/** An integer argument under one of the queries' limits, defaulted when absent. */
export function limitedInt(limit: IntLimit) {
  return intParam.default(limit.fallback).superRefine((v, ctx) => {
    const problem = limitProblem(limit, v);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem, params: { whole: true } });
  });
}

/** The timeline window rule over an object schema with `t0`/`t1` (issued on `t1`). */
export function timelineWindow<S extends z.ZodType<{ t0?: number; t1?: number }>>(schema: S) {
  return schema.superRefine((q, ctx) => {
    const problem = windowProblem(q.t0, q.t1);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem, path: ['t1'], params: { whole: true } });
  });
}
