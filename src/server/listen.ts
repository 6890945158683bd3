// Starts the HTTP server over one or several open runs (and their follow loops when asked).
import { createServer, maxHeaderSize, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { answerClientErrors, refusingMalformed } from './rawRequests.ts';
import type { RunSources } from '../queries/runAnswers.ts';
import { type AppOptions, createMultiApp } from './app.ts';
import { EventFeed, type Follower } from './events.ts';
import { ServedRuns } from './runSet.ts';

export interface ListenOptions extends AppOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Run the 2 s follow timer (tests pass false and call `follower.tick()`). */
  followTimer?: boolean;
}

export interface RunningServer {
  url: string;
  port: number;
  host: string;
  /** The first run's follow loop. */
  follower: Follower | null;
  /** The first run's announcements. */
  feed: EventFeed;
  runs: ServedRuns;
  close(): Promise<void>;
}

/** How long an idle kept-alive connection stays open, ms. */
export const KEEP_ALIVE_MS = 65_000;

let rejectionsGuarded = false;

/**
 * A decoder may leave a rejected promise nobody awaits (hyparquet rejects one read of a damaged file and
 * lets its sibling column reads fail unobserved): logged, never allowed to end the server.
 */
function guardUnhandledRejections(): void {
  if (rejectionsGuarded) return;
  rejectionsGuarded = true;
  process.on('unhandledRejection', (reason) => {
    console.error(`rlsight: an unobserved read failed (the request it belonged to was answered): ${reason instanceof Error ? reason.message : String(reason)}`);
  });
}

/** Serves one open run. */
export function startServer(run: RunSources, opts: ListenOptions = {}): Promise<RunningServer> {
  const runs = new ServedRuns({ ...opts, feed: opts.feed ?? new EventFeed() }, () => Promise.reject(new Error('no run discovery')));
  runs.add(run.roots[0] ?? 'run', run);
  return startRunsServer(runs, opts);
}

/** Serves the runs of `runs` (more may join it while serving). */
export async function startRunsServer(runs: ServedRuns, opts: ListenOptions = {}): Promise<RunningServer> {
  guardUnhandledRejections();
  const host = opts.host ?? '127.0.0.1';
  const app = createMultiApp({ runs, options: { ...opts, host } });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve(
      {
        fetch: app.fetch,
        hostname: host,
        port: opts.port ?? 7788,
        createServer: ((options: object, listener: Parameters<typeof refusingMalformed>[0]) => createServer(options, refusingMalformed(listener))) as typeof createServer,
      },
      () => resolve(s),
    );
    s.once('error', reject);
  });
  answerClientErrors(server as Server, maxHeaderSize);
  // An idle kept-alive connection stays open long enough that a client asking again at once is never reset
  // because a busy event loop read its request only after Node's 5 s default had run out.
  const http = server as unknown as { keepAliveTimeout: number; headersTimeout: number };
  http.keepAliveTimeout = KEEP_ALIVE_MS;
  http.headersTimeout = KEEP_ALIVE_MS + 1000;
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${shown}:${port}/`,
    port,
    host,
    follower: runs.firstFollower(),
    feed: runs.runs()[0]?.feed ?? new EventFeed(),
    runs,
    close: () =>
      new Promise<void>((resolve) => {
        runs.stop();
        // SSE clients hold connections open; drop them so close() returns.
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
