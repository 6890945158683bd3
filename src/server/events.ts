// Live updates: the follow loop diffs the run catalog every tick and announces what changed over SSE.
import type { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { toJsonText } from './json.ts';
import type { RunCatalog } from '../queries/runAnswers.ts';
import type { RunEvent } from '../wire/index.ts';

/** How often `--follow` tails the run. */
export const FOLLOW_INTERVAL_MS = 2000;
const HEARTBEAT_MS = 15_000;



const added = <T>(before: readonly T[], after: readonly T[]): T[] => {
  const seen = new Set(before);
  return after.filter((x) => !seen.has(x));
};

/** The announcements that take a client from `before` to `after`. */
export function diffCatalog(before: RunCatalog, after: RunCatalog): RunEvent[] {
  const out: RunEvent[] = [];
  const steps = added(before.steps, after.steps);
  if (steps.length) out.push({ event: 'steps', data: { steps } });
  const train = added(before.rollout_ids.train, after.rollout_ids.train);
  const evalIds = added(before.rollout_ids.eval, after.rollout_ids.eval);
  if (train.length || evalIds.length) out.push({ event: 'rollout', data: { train, eval: evalIds } });
  const keys = added(before.metric_keys, after.metric_keys);
  const engineKeys = added(before.engine_metric_keys, after.engine_metric_keys);
  if (keys.length || engineKeys.length) out.push({ event: 'keys', data: { metric_keys: keys, engine_metric_keys: engineKeys } });
  const lanes = added(before.lanes, after.lanes);
  if (lanes.length) out.push({ event: 'lanes', data: { lanes } });
  const [b, a] = [before.time_range, after.time_range];
  if (a && (!b || a[0] !== b[0] || a[1] !== b[1])) out.push({ event: 'edge', data: { time_range: a } });
  return out;
}

type Listener = (e: RunEvent) => void;

/** Fan-out of run events to every connected client. */
export class EventFeed {
  private readonly listeners = new Set<Listener>();

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  publish(e: RunEvent): void {
    for (const fn of this.listeners) fn(e);
  }

  get clients(): number {
    return this.listeners.size;
  }
}

export interface Follower {
  /** Runs one tail step now (tests call it instead of waiting for the timer). */
  tick(): Promise<RunEvent[]>;
  stop(): void;
}

/**
 * Tails the run: `advance()` reads what the streams gained, `catalog()` describes the run after it,
 * and every difference is published. Ticks never overlap; a failing tick is logged and retried next time.
 */
export function startFollow(opts: {
  advance: () => unknown | Promise<unknown>;
  catalog: () => Promise<RunCatalog>;
  feed: EventFeed;
  intervalMs?: number;
  timer?: boolean;
}): Follower {
  let last: Promise<RunCatalog> = opts.catalog().catch(() => emptyCatalog());
  let running: Promise<RunEvent[]> | null = null;
  const tick = (): Promise<RunEvent[]> => {
    if (running) return running;
    const step = (async () => {
      await opts.advance();
      const before = await last;
      const after = await opts.catalog();
      last = Promise.resolve(after);
      const events = diffCatalog(before, after);
      for (const e of events) opts.feed.publish(e);
      return events;
    })();
    running = step.finally(() => {
      running = null;
    });
    return running;
  };
  const handle =
    opts.timer === false
      ? null
      : setInterval(() => {
          tick().catch((err) => console.error('rlsight: follow:', err instanceof Error ? err.message : err));
        }, opts.intervalMs ?? FOLLOW_INTERVAL_MS);
  handle?.unref();
  return { tick, stop: () => handle && clearInterval(handle) };
}

export function emptyCatalog(): RunCatalog {
  return { steps: [], rollout_ids: { train: [], eval: [] }, metric_keys: [], engine_metric_keys: [], lanes: [], time_range: null };
}

/** `GET /api/events`: a `hello` with the mode, then one SSE event per change, and a heartbeat comment. */
export function mountEvents(app: Hono, feed: EventFeed, mode: 'follow' | 'static'): void {
  app.get('/api/events', (c) => {
    c.header('Cache-Control', 'no-cache, no-transform');
    c.header('X-Accel-Buffering', 'no');
    return streamSSE(c, async (stream) => {
      const queue: RunEvent[] = [];
      let wake: (() => void) | null = null;
      const unsubscribe = feed.subscribe((e) => {
        queue.push(e);
        wake?.();
      });
      stream.onAbort(() => {
        unsubscribe();
        wake?.();
      });
      try {
        await stream.writeSSE({ event: 'hello', data: toJsonText({ mode }) });
        while (!stream.aborted) {
          const e = queue.shift();
          if (e) {
            await stream.writeSSE({ event: e.event, data: toJsonText(e.data) });
            continue;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, HEARTBEAT_MS).unref();
          });
          wake = null;
          if (!queue.length && !stream.aborted) await stream.write(': heartbeat\n\n');
        }
      } finally {
        unsubscribe();
      }
    });
  });
}
