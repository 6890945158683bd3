// The names downloads are saved under: each begins with the run's id (the name the app and the URLs give the
// run, so two runs of one recipe save apart), then what the file holds, in characters every file system takes.
import type { Context } from 'hono';

/** The key of a request's env under which the app hands a run's API the id of the run it answers for. */
const RUN_ID = 'rlsightRunId';

/** The env a run's API is fetched with: the server's own (its node bindings) and the run's id. */
export function withRunId(env: unknown, id: string): Record<string, unknown> {
  return { ...(env !== null && typeof env === 'object' ? (env as Record<string, unknown>) : {}), [RUN_ID]: id };
}

/** The id of the run a request is answered for (`run` when the API was fetched without one). */
export function servedRunId(c: Context): string {
  const id = (c.env as Record<string, unknown> | undefined)?.[RUN_ID];
  return typeof id === 'string' && id !== '' ? id : 'run';
}

/** Windows refuses these as a file's name before its first dot, whatever follows. */
const RESERVED = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/i;

/**
 * One part of a file name: letters, digits, `.`, `_` and `-` only (anything else becomes `_`), no leading dot
 * (a hidden file) or dash, at most 80 characters; `run` when nothing but underscores is left.
 */
export function safeNamePart(s: string): string {
  const kept = s
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[.-]+/, '')
    .slice(0, 80);
  // (a run id, URL-safe already, is kept as it is: `_x` too)
  if (/^_*$/.test(kept)) return 'run';
  return RESERVED.test(kept.split('.')[0]!) ? `_${kept}` : kept;
}

/** A download's file name: the run's id, then `rest` (what it holds and its extension, already safe). */
export function downloadName(c: Context, rest: string): string {
  return `${safeNamePart(servedRunId(c))}.${rest}`;
}

/** The latest epoch second a Date holds. */
const DATE_MAX_S = 8.64e12;

/** A time as a file name part: UTC to the second, `20261206T213555Z` (seconds, for a time no date holds). */
export function utcNamePart(t: number): string {
  const s = Math.floor(t);
  if (!Number.isFinite(s) || Math.abs(s) > DATE_MAX_S) return safeNamePart(String(s));
  return safeNamePart(new Date(s * 1000).toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z'));
}
