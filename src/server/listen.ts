// Starts the HTTP server over an open run (and the follow loop when asked).
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { type AppOptions, createApp } from './app.ts';
import { EventFeed, type Follower, startFollow } from './events.ts';
import type { RunSources } from '../queries/runAnswers.ts';

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
  follower: Follower | null;
  feed: EventFeed;
  close(): Promise<void>;
}

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

export async function startServer(run: RunSources, opts: ListenOptions = {}): Promise<RunningServer> {
  guardUnhandledRejections();
  const host = opts.host ?? '127.0.0.1';
  const feed = opts.feed ?? new EventFeed();
  const app = createApp({ run, options: { ...opts, host, feed } });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: opts.port ?? 7788 }, () => resolve(s));
    s.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const follower = opts.follow
    ? startFollow({ advance: () => run.advance(), catalog: () => run.catalog(), feed, timer: opts.followTimer ?? true })
    : null;
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${shown}:${port}/`,
    port,
    host,
    follower,
    feed,
    close: () =>
      new Promise<void>((resolve) => {
        follower?.stop();
        // SSE clients hold connections open; drop them so close() returns.
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
