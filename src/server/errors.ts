// Maps typed failures to HTTP answers: 503 still writing, 404 missing, 400 bad argument, 422 a damaged file
// (named relative to the run, with the problem); paths never leak.
import type { Context } from 'hono';
import { damageOf, DumpStillWriting, NotFound, RefusedOption, SlimeDumpError, SourceUnavailable } from '../run/errors.ts';
import { BadArgument } from '../queries/limits.ts';
import { relativeToRoots } from '../formats/fileAccess.ts';

/** Seconds a client should wait before asking again for a dump that is still being written. */
export const RETRY_AFTER_S = 5;

export interface HttpFailure {
  status: 400 | 404 | 422 | 500 | 503;
  detail: string;
  headers?: Record<string, string>;
}

/** Removes every absolute location of this machine from a message, keeping paths relative to the run. */
export function scrubPaths(message: string, roots: readonly string[]): string {
  const out = relativeToRoots(message, roots);
  // Whatever absolute path is left (a cache dir, a temp file) is reduced to its last component.
  // (an address of this API, `/api/runs…` or `/api/rlsight…`, is not one)
  return out.replace(/(^|[\s'"(=:])\/(?!api\/(?:runs|rlsight)\b)(?:[^\s'"/)]+\/)+([^\s'"/)]+)/g, '$1$2');
}

/** The HTTP answer for a thrown error, or null when it is a defect (a 500 the caller logs). */
export function classify(err: unknown): HttpFailure | null {
  if (err instanceof BadArgument || err instanceof RefusedOption) return { status: 400, detail: err.message };
  if (err instanceof NotFound) return { status: 404, detail: err.message };
  if (err instanceof SlimeDumpError) return { status: 422, detail: err.message };
  if (err instanceof SourceUnavailable) return { status: 503, detail: err.message, headers: { 'Retry-After': String(RETRY_AFTER_S) } };
  if (err instanceof DumpStillWriting) {
    return { status: 503, detail: err.message, headers: { 'Retry-After': String(RETRY_AFTER_S) } };
  }
  const damage = damageOf(err);
  if (damage !== null) return { status: 422, detail: damage };
  if (isNodeError(err) && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) {
    return { status: 404, detail: 'not found' };
  }
  return null;
}

export function failureResponse(c: Context, err: unknown, roots: readonly string[]): Response {
  const failure = classify(err);
  if (!failure) {
    console.error(`rlsight: ${c.req.method} ${c.req.path}:`, err);
    return c.json({ detail: 'Internal Server Error' }, 500);
  }
  for (const [k, v] of Object.entries(failure.headers ?? {})) c.header(k, v);
  return c.json({ detail: scrubPaths(failure.detail, roots) }, failure.status);
}

function isNodeError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string';
}

/** The answer to a run id the server does not hold: it names the ones it does. */
export function unknownRun(id: string, known: readonly string[]): string {
  return `no run named ${JSON.stringify(id)}; the runs served are ${known.length ? known.map((k) => JSON.stringify(k)).join(', ') : 'none'} (see /api/runs)`;
}
