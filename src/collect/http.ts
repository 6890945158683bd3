// The collector's HTTP surface: `POST /v1/streams/{stream}` (an NDJSON batch, answered once it is in
// the write-ahead log), `POST /v1/router` (where the SGLang router is), `GET /v1/status` (which collector
// this is), `GET /metrics` (Prometheus exposition). Every write needs the run's token; a refused batch
// writes nothing.
import { timingSafeEqual } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import * as z from 'zod';
import { isStreamName, STREAMS } from '../formats/dashboard/layout.ts';
import type { BatchId, Collector } from './collector.ts';
import { SAMPLES_STREAM } from './sampleSteps.ts';

import { DEFAULT_MAX_BATCH_BYTES } from './usage.ts';

export interface CollectorAppOptions {
  token: string;
  maxBatchBytes?: number;
  /** The Prometheus exposition (text and content type). */
  metrics?: () => Promise<{ text: string; contentType: string }>;
  /** Called when a producer names the SGLang router. */
  setRouter?: (addr: string) => void;
  /** What `GET /v1/status` tells a holder of the token: this collector's process and start, as in collector.json. */
  status?: { pid: number; started_ts: number };
}

/** `PRODUCER/SEQ`: a producer's batch number, so a retried batch the collector already has is not taken twice. */
export const BATCH_HEADER = 'X-Rlsight-Batch';
const BATCH_ID = /^([A-Za-z0-9_-]{1,64})\/(0|[1-9]\d{0,15})$/;

const utf8 = new TextDecoder('utf-8', { fatal: true });
const routerBody = z.strictObject({ addr: z.string().regex(/^https?:\/\/[^\s/]+$/, 'expected http(s)://host:port') });

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function createCollectorApp(collector: Collector, opts: CollectorAppOptions): Hono {
  const app = new Hono();
  const maxBytes = opts.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;

  const requireToken = async (c: Context, next: () => Promise<void>): Promise<Response | void> => {
    const auth = c.req.header('authorization') ?? '';
    // the scheme is case-insensitive (RFC 7235)
    const m = /^Bearer +(\S+)$/i.exec(auth);
    if (m === null || !sameToken(m[1], opts.token)) {
      c.header('WWW-Authenticate', 'Bearer realm="rlsight collector"');
      return c.json({ error: m === null ? 'missing Authorization: Bearer <token> (the token is in dashboard/collector.json)' : 'wrong token for this run' }, 401);
    }
    await next();
  };
  const limit = bodyLimit({ maxSize: maxBytes, onError: (c) => c.json({ error: `batch larger than ${maxBytes} bytes; send smaller batches` }, 413) });

  app.post('/v1/streams/:stream', requireToken, limit, async (c) => {
    const stream = c.req.param('stream');
    if (!isStreamName(stream) && stream !== SAMPLES_STREAM) return c.json({ error: `unknown stream '${stream}' (expected one of ${[...STREAMS, SAMPLES_STREAM].join(', ')})` }, 404);
    let body: string;
    let bytes = new Uint8Array(await c.req.arrayBuffer());
    const encoding = (c.req.header('content-encoding') ?? 'identity').trim().toLowerCase();
    if (encoding === 'gzip' || encoding === 'x-gzip') {
      // decompressed within the same bound as an uncompressed batch; the log keeps the decompressed text
      try {
        bytes = new Uint8Array(gunzipSync(bytes, { maxOutputLength: maxBytes }));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return c.json({ error: `batch larger than ${maxBytes} bytes once decompressed; send smaller batches` }, 413);
        return c.json({ error: `Content-Encoding: gzip, but the body is not gzip data (${(err as Error).message})` }, 400);
      }
    } else if (encoding !== 'identity') {
      return c.json({ error: `Content-Encoding: ${encoding.slice(0, 40)} is not accepted; send the batch uncompressed or as gzip` }, 415);
    }
    try {
      body = utf8.decode(bytes);
    } catch {
      return c.json({ error: 'batch is not UTF-8 text' }, 400);
    }
    if (body.trim() === '') return c.json({ error: `empty batch: send one NDJSON ${stream} record per line` }, 400);
    const batchHeader = c.req.header(BATCH_HEADER);
    let id: BatchId | undefined;
    if (batchHeader !== undefined) {
      const m = BATCH_ID.exec(batchHeader);
      if (m === null) return c.json({ error: `${BATCH_HEADER}: expected PRODUCER/SEQ (letters, digits, - or _; a whole number), got '${batchHeader.slice(0, 80)}'` }, 400);
      // a larger number would be rounded, and could then pass for another batch's
      if (!Number.isSafeInteger(Number(m[2]))) return c.json({ error: `${BATCH_HEADER}: the batch number ${m[2]} is above 2^53 - 1 (${Number.MAX_SAFE_INTEGER}); number batches from a smaller start` }, 400);
      // `-` names the collector's own lines in its log, which are never taken for a retry
      if (m[1] === '-') return c.json({ error: `${BATCH_HEADER}: the producer '-' is the collector's own; name yours with letters or digits` }, 400);
      id = { producer: m[1], seq: Number(m[2]) };
    }
    const r = collector.ingest(stream, body, id, bytes);
    if (!r.ok && 'conflict' in r) return c.json({ error: r.conflict }, 409);
    if (!r.ok && 'unavailable' in r) {
      c.header('Retry-After', '1');
      return c.json({ error: r.unavailable }, 503);
    }
    if (!r.ok) {
      const { line, field, message } = r.problem;
      return c.json({ error: `${stream} line ${line}${field ? `, field ${field}` : ''}: ${message}`, line, field }, 400);
    }
    try {
      await r.durable;
    } catch (err) {
      collector.reportError(err);
      c.header('Retry-After', '1');
      return c.json({ error: `the batch could not be written to the write-ahead log (${(err as Error).message}); send it again` }, 503);
    }
    const problems = r.problems.map((p) => `${stream} line ${p.line}${p.field ? `, field ${p.field}` : ''}: ${p.message}`);
    return c.json({ accepted: r.accepted, rejected: r.rejected, ...(problems.length ? { problems } : {}), ...(r.duplicate ? { duplicate: true } : {}) });
  });

  app.post('/v1/router', requireToken, bodyLimit({ maxSize: 4096 }), async (c) => {
    let doc: unknown;
    try {
      doc = await c.req.json();
    } catch {
      return c.json({ error: 'expected a JSON body {"addr": "http://host:port"}' }, 400);
    }
    const r = routerBody.safeParse(doc);
    if (!r.success) return c.json({ error: `${r.error.issues[0].path.join('.') || 'body'}: ${r.error.issues[0].message}`, field: r.error.issues[0].path.join('.') }, 400);
    if (!opts.setRouter) return c.json({ error: 'this collector does not scrape SGLang' }, 409);
    opts.setRouter(r.data.addr);
    return c.json({ router: r.data.addr });
  });

  // a collector about to start on the same run asks whether the one collector.json names is still running
  app.get('/v1/status', requireToken, (c) => c.json({ collector: 'rlsight', ...(opts.status ?? {}) }));

  app.get('/metrics', async (c) => {
    if (!opts.metrics) return c.text('', 404);
    const m = await opts.metrics();
    return c.body(m.text, 200, { 'Content-Type': m.contentType });
  });

  app.notFound((c) => c.json({ error: `no such endpoint: ${c.req.method} ${c.req.path}` }, 404));
  app.onError((err, c) => {
    collector.reportError(err);
    return c.json({ error: `collector error: ${err.message}` }, 500);
  });
  return app;
}
