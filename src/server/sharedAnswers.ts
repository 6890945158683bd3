// Answers shared by everyone asking at once, and kept while they cannot change. When a team opens the same
// server at once, sixteen people ask for the same answers within seconds: the first asker's request
// computes it (gzipped once when the client takes gzip) and everyone asking for the same bytes while it is
// computed or sent reads the same chunks, from the start. Telemetry answers are kept afterwards while the
// run's telemetry is unchanged (LRU within a byte budget), so a reload, a second viewer or the app returning
// to a view costs a lookup. Heavy answers take their turn at the scheduler's gate; an answer whose every
// asker went away stops: dropped before its turn, its handler told through `answerSignal` (not the first
// asker's own request, which may leave while others still wait), or its body no longer produced.
import { once } from 'node:events';
import { constants, createGzip } from 'node:zlib';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { COMPRESSIBLE_CONTENT_TYPE_REGEX } from 'hono/compress';
import { PARTIAL_HEADER } from './json.ts';
import { BUSY_RETRY_AFTER_S, type Gate, heavyGates, heavyKind, type HeavyKind, ServerBusy } from './scheduler.ts';

/** Bytes the kept bodies of one run may hold together; a body over half of it is never kept. */
export const KEPT_ANSWER_BYTES = 48 * 2 ** 20;

/** Content types worth gzipping: text, JSON, and the binary frames (mostly runs of equal bytes). */
export function compressible(type: string): boolean {
  return COMPRESSIBLE_CONTENT_TYPE_REGEX.test(type) || type.startsWith('application/octet-stream') || type.startsWith('application/vnd.rlsight.columns');
}

interface Head {
  status: number;
  headers: [string, string][];
}

/** One answer being computed and sent: its head once known, its body's chunks as they are produced. */
class Flight {
  head: Head | null = null;
  readonly chunks: Uint8Array[] = [];
  bytes = 0;
  finished = false;
  failure: unknown = null;
  /** Aborted once every asker went away before the body was produced. */
  readonly abandoned = new AbortController();
  private askers = 0;
  private wakers: (() => void)[] = [];

  /** Resolves when something changed (a head, a chunk, the end). */
  changed(): Promise<void> {
    return new Promise((r) => this.wakers.push(r));
  }

  wake(): void {
    const w = this.wakers;
    this.wakers = [];
    for (const f of w) f();
  }

  /** One more asker; the returned function says it left (once). */
  join(): () => void {
    this.askers++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      if (--this.askers === 0 && !this.finished) this.abandoned.abort();
    };
  }

  /** The answer for one asker: waits for the head, then reads the shared chunks from the first. */
  async respond(signal: AbortSignal): Promise<Response> {
    const leave = this.join();
    signal.addEventListener('abort', leave, { once: true });
    while (this.head === null && this.failure === null && !signal.aborted) await this.changed();
    if (this.head === null) {
      leave();
      if (this.failure !== null && !signal.aborted) throw this.failure;
      return new Response(null, { status: 499 }); // no one reads it
    }
    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        while (next === this.chunks.length && !this.finished) await this.changed();
        if (next < this.chunks.length) {
          controller.enqueue(this.chunks[next++]);
          return;
        }
        leave();
        if (this.failure !== null) controller.error(this.failure);
        else controller.close();
      },
      cancel: () => leave(),
    });
    return new Response(body, { status: this.head.status, headers: this.head.headers });
  }
}

interface Kept {
  head: Head;
  body: Uint8Array;
  /** The path it answers and the version of the data it read (paths may depend on different data). */
  path: string;
  version: string;
}

export interface SharedAnswersOptions {
  /** The version of the run's data the answer at `path` reads (null: nothing is kept). */
  version: (path: string) => string | null;
  /** Paths whose answers are kept after they are sent (the telemetry answers). */
  keep?: (path: string) => boolean;
  budget?: number;
  /** One gate for every heavy answer (default: a gate per kind, `heavyGates`). */
  gate?: Gate;
  /** The gate of each kind of heavy answer, when no single `gate` is given. */
  gates?: (kind: HeavyKind) => Gate;
}

/** gzip level of the kept telemetry answers (tens of MB for all lanes of an hour: speed over the last bytes). */
const TELEMETRY_GZIP_LEVEL = 4;
/**
 * Answers gzipped at the telemetry's level too: a sample's tokens (a megabyte of per-token numbers for a 6k-token
 * sample) is 2% larger at level 4 but compressed in a third of the default level's 45 ms, most of a cold read.
 */
const FAST_GZIP = /^\/api\/rollout\/[^/]+\/sample\/[^/]+\/tokens$/;

/** Bytes of body text an answer may run ahead of its gzip. */
const GZIP_AHEAD = 2 ** 20;
/** Bytes of gzip output per step of the thread pool. */
const GZIP_CHUNK = 2 ** 16;

/** Never shared: the event stream stays open, search streams its matches as they are found. */
const UNSHARED = /^\/api\/(events|rlsight\/search)$/;

/** Where a shared answer's handler finds the signal that every asker went away. */
const ANSWER_SIGNAL = 'rlsight.answerSignal';

/**
 * Aborts once no one waits for the answer `c` computes any more: every asker of a shared answer left (one
 * asker leaving is not enough while others wait), or for an answer not shared, its one request went away.
 * Work a handler starts after an await should stop when it is aborted.
 */
export function answerSignal(c: Context): AbortSignal {
  return ((c as Context<{ Variables: Record<string, unknown> }>).get(ANSWER_SIGNAL) as AbortSignal | undefined) ?? c.req.raw.signal;
}

/**
 * Shares GET answers among concurrent askers of the same URL, `Accept`, gzip-or-not and telemetry version;
 * keeps the 200 answers `keep` picks, computed while the version did not move, that are not partial
 * (`x-rlsight-coverage`: read while the history is still being read).
 */
export function sharedAnswers(opts: SharedAnswersOptions): MiddlewareHandler {
  const keep = opts.keep ?? ((path: string) => path.startsWith('/api/timeline/'));
  const budget = opts.budget ?? KEPT_ANSWER_BYTES;
  const gateOf = opts.gate !== undefined ? () => opts.gate! : (opts.gates ?? heavyGates);
  const flights = new Map<string, Flight>();
  const kept = new Map<string, Kept>();
  let keptBytes = 0;

  const remember = (key: string, entry: Kept): void => {
    kept.set(key, entry);
    keptBytes += entry.body.byteLength;
    const current = new Map<string, string | null>();
    const versionOf = (path: string): string | null => {
      if (!current.has(path)) current.set(path, opts.version(path));
      return current.get(path)!;
    };
    for (const [k, v] of kept) {
      // least recently used first; an entry whose path's data moved on can never be asked for again (each
      // path by its own version: the fleet answer's also covers the run's damage)
      if (keptBytes <= budget && versionOf(v.path) === v.version) continue;
      kept.delete(k);
      keptBytes -= v.body.byteLength;
    }
  };

  /** Ends a flight's sharing; an abandoned one may have been replaced by its next asker's, which stays. */
  const forget = (key: string, flight: Flight): void => {
    if (flights.get(key) === flight) flights.delete(key);
  };

  /** Computes the answer for every asker of `flight`: its turn at the gate, the handler, the body (gzipped once). */
  const fly = async (flight: Flight, c: Context, next: Next, o: { key: string; version: string | null; gzip: boolean; heavy: HeavyKind | null }): Promise<void> => {
    let release = (): void => {};
    (c as Context<{ Variables: Record<string, unknown> }>).set(ANSWER_SIGNAL, flight.abandoned.signal);
    try {
      if (o.heavy !== null) release = await gateOf(o.heavy).enter(flight.abandoned.signal);
      await next();
      const res = c.res;
      const headers = new Headers(res.headers);
      const gzip = o.gzip && res.body !== null && !headers.has('content-encoding') && compressible(headers.get('content-type') ?? '');
      if (gzip) {
        headers.set('content-encoding', 'gzip');
        headers.set('vary', 'Accept-Encoding');
        headers.delete('content-length');
      }
      flight.head = { status: res.status, headers: [...headers] };
      flight.wake();
      // the large telemetry answers favour speed; the others compress as the framework's gzip did
      if (res.body !== null) await produce(flight, res.body, gzip ? (keep(c.req.path) || FAST_GZIP.test(c.req.path) ? TELEMETRY_GZIP_LEVEL : constants.Z_DEFAULT_COMPRESSION) : null);
      flight.finished = true;
      forget(o.key, flight);
      flight.wake();
      if (flight.abandoned.signal.aborted) return; // its body was cut short: never kept
      const keepable = res.status === 200 && o.version !== null && opts.version(c.req.path) === o.version && !headers.has(PARTIAL_HEADER) && flight.bytes <= budget / 2;
      if (keepable && keep(c.req.path)) remember(o.key, { head: flight.head, body: Buffer.concat(flight.chunks, flight.bytes), path: c.req.path, version: o.version! });
    } catch (err) {
      flight.failure = err;
      flight.finished = true;
      forget(o.key, flight);
      flight.wake();
    } finally {
      release();
    }
  };

  return async (c, next) => {
    if (c.req.method !== 'GET' || UNSHARED.test(c.req.path)) return next();
    const version = opts.version(c.req.path);
    const gzip = /\bgzip\b/i.test(c.req.header('accept-encoding') ?? '');
    const key = `${version ?? ''}\n${c.req.url}\n${c.req.header('accept') ?? ''}\n${gzip}`;
    const hit = kept.get(key);
    if (hit !== undefined) {
      kept.delete(key);
      kept.set(key, hit);
      return new Response(hit.body, { status: hit.head.status, headers: hit.head.headers });
    }
    let flight = flights.get(key);
    if (flight === undefined) {
      const mine = (flight = new Flight());
      flights.set(key, mine);
      // an answer no one waits for any more is not joined by a later asker: it computes afresh
      mine.abandoned.signal.addEventListener('abort', () => forget(key, mine), { once: true });
      void fly(flight, c, next, { key, version, gzip, heavy: heavyKind(c.req.path, new URL(c.req.url).searchParams) });
    }
    let res: Response;
    try {
      res = await flight.respond(c.req.raw.signal);
    } catch (err) {
      if (!(err instanceof ServerBusy)) throw err;
      res = new Response(JSON.stringify({ detail: err.message }), { status: 503, headers: { 'content-type': 'application/json', 'retry-after': String(BUSY_RETRY_AFTER_S) } });
    }
    // the asker that computed it holds the handler's response (read into the flight): replaced whole, not merged
    c.res = undefined;
    c.res = res;
  };
}

/** Reads the handler's body into the flight's chunks (gzipped at `gzipLevel` as it streams, unless null); stops when no one is left to read it. */
async function produce(flight: Flight, body: ReadableStream<Uint8Array>, gzipLevel: number | null): Promise<void> {
  const reader = body.getReader();
  const stop = (): void => void reader.cancel().catch(() => {});
  flight.abandoned.signal.addEventListener('abort', stop, { once: true });
  const add = (chunk: Uint8Array): void => {
    flight.chunks.push(chunk);
    flight.bytes += chunk.byteLength;
    flight.wake();
  };
  try {
    if (gzipLevel === null) {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        add(value);
      }
    }
    // The body is made while earlier pieces compress on the thread pool: it runs up to GZIP_AHEAD ahead
    // (waiting for each piece to drain left the serving thread idle), compressed in large steps (each
    // output chunk is a round trip to this thread).
    const gz = createGzip({ level: gzipLevel, chunkSize: GZIP_CHUNK });
    gz.on('data', add);
    const ended = once(gz, 'end');
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      // past the stream's mark `write` has asked for a drain, which comes once all it holds is compressed
      gz.write(value);
      if (gz.writableLength > GZIP_AHEAD) await once(gz, 'drain');
    }
    gz.end();
    await ended;
  } finally {
    flight.abandoned.signal.removeEventListener('abort', stop);
  }
}
