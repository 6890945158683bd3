// Finished telemetry answers kept while the run's telemetry is unchanged: asking again for the same
// window (a reload, a second viewer, the app returning to a view) costs a lookup, not a rebuild and a
// re-compression. Bodies are kept gzipped when the client takes gzip, within a byte budget (LRU).
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import type { MiddlewareHandler } from 'hono';
import { PARTIAL_HEADER } from './json.ts';


/** Bytes the kept bodies of one run may hold together; a body over half of it is never kept. */
export const ANSWER_CACHE_BYTES = 48 * 2 ** 20;
/** Bodies smaller than this are sent as they are (gzip would not pay). */
const GZIP_FROM_BYTES = 1024;

interface Kept {
  status: number;
  headers: [string, string][];
  body: Uint8Array;
}

/**
 * Keeps 200 answers of GET requests keyed by the URL, `Accept`, whether the client takes gzip and
 * `version()` (null: keep nothing). An answer is kept only if the version did not move while it was
 * computed, so a torn answer is never served twice.
 */
export function answerCache(version: () => string | null, budget = ANSWER_CACHE_BYTES): MiddlewareHandler {
  const kept = new Map<string, Kept>();
  let total = 0;
  return async (c, next) => {
    const before = version();
    if (c.req.method !== 'GET' || before === null) return next();
    const takesGzip = /\bgzip\b/i.test(c.req.header('accept-encoding') ?? '');
    const key = `${before}\n${c.req.url}\n${c.req.header('accept') ?? ''}\n${takesGzip}`;
    const hit = kept.get(key);
    if (hit !== undefined) {
      kept.delete(key);
      kept.set(key, hit);
      return new Response(hit.body, { status: hit.status, headers: hit.headers });
    }
    await next();
    const res = c.res;
    if (res.status !== 200 || res.headers.has('content-encoding') || res.body === null) return;
    const headers = new Headers(res.headers);
    const { body, gzipped } = await collect(res.body, takesGzip);
    if (gzipped) {
      headers.set('content-encoding', 'gzip');
      headers.set('vary', 'Accept-Encoding');
      headers.delete('content-length');
    }
    c.res = new Response(body, { status: 200, headers });
    // a partial answer (read while the history is still being read) is never kept as if it were complete
    if (version() !== before || body.byteLength > budget / 2 || headers.has(PARTIAL_HEADER)) return;
    kept.set(key, { status: 200, headers: [...headers], body });
    total += body.byteLength;
    for (const [k, v] of kept) {
      if (total <= budget) break;
      kept.delete(k);
      total -= v.body.byteLength;
    }
    // entries of older versions can never be asked for again
    for (const [k, v] of kept) {
      if (k.startsWith(`${before}\n`)) continue;
      kept.delete(k);
      total -= v.body.byteLength;
    }
  };
}

/**
 * The body's bytes, gzipped as they stream in when `gzip` (and the body is not tiny), so a large answer
 * is held compressed only.
 */
async function collect(stream: ReadableStream<Uint8Array>, gzip: boolean): Promise<{ body: Uint8Array; gzipped: boolean }> {
  const reader = stream.getReader();
  const raw: Uint8Array[] = [];
  let rawBytes = 0;
  let gz: ReturnType<typeof createGzip> | null = null;
  const packed: Buffer[] = [];
  let finished: Promise<unknown> | null = null;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (gz === null) {
      raw.push(value);
      rawBytes += value.byteLength;
      if (!gzip || rawBytes < GZIP_FROM_BYTES) continue;
      gz = createGzip({ level: 4 });
      gz.on('data', (chunk: Buffer) => packed.push(chunk));
      finished = once(gz, 'end');
      for (const part of raw.splice(0)) if (!gz.write(part)) await once(gz, 'drain');
      continue;
    }
    if (!gz.write(value)) await once(gz, 'drain');
  }
  if (gz === null) return { body: raw.length === 1 ? raw[0] : Buffer.concat(raw), gzipped: false };
  gz.end();
  await finished;
  return { body: Buffer.concat(packed), gzipped: true };
}
