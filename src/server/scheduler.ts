// Which answers wait their turn: on a small machine a dozen whole-run or all-lanes answers computed at once
// take every core and the cheap answers (the run header, one lane's window) wait behind all of them. Cheap
// answers run at once; heavy ones go through a gate that lets a few compute at a time, in arrival order,
// from a bounded queue; a queued answer no one waits for any more is dropped before it starts. Heavy answers
// wait mostly for different threads (a step's dump decoding, an hour's parse, the folded whole run), so each
// kind has its own gate: a step's summary never queues behind all lanes' hour waiting for its parse.

/** Heavy answers computed at once (the machine's cores are shared with the parse threads and gzip). */
export const HEAVY_AT_ONCE = 2;
/** Heavy answers that may wait for their turn; more are told to ask again later (503). */
export const HEAVY_QUEUE = 64;

/** Seconds a client told the server is busy should wait before asking again. */
export const BUSY_RETRY_AFTER_S = 5;

/** The queue was full: the server answers 503 with Retry-After. */
export class ServerBusy extends Error {
  constructor(queued: number) {
    super(`the server is busy: ${queued} answers are waiting to be computed; ask again in ${BUSY_RETRY_AFTER_S} s`);
  }
}

/** Every asker of a queued answer went away before its turn came. */
export class NoOneWaits extends Error {
  constructor() {
    super('no one waits for this answer any more');
  }
}

/** Paths answered at once whatever else is computing: small answers from what the model holds. */
const CHEAP_PATHS = /^\/api\/(meta|runs|metrics|timeline\/topology|timeline\/bubbles|rlsight\/lanes)$/;
/**
 * A step's preview shares its step's read with the summary (the reader decodes one cold step at a time): in the
 * summaries' gate it would wait for them and come no earlier than they do, so it is let through at once.
 */
const STEP_PREVIEW = /^\/api\/rlsight\/rollout\/[^/]+\/preview$/;
/** Window answers over chosen lanes: bounded by the longest window and the lanes asked for. */
const LANE_WINDOW_PATHS = /^\/api\/timeline\/(gpu|phases|gpu_processes|heatmap)$/;

/**
 * What a heavy answer mostly waits for: `step` a step's records (dump decoding), `window` an hour of every
 * lane (its parse), `run` the whole run's folded telemetry (fleet, outliers, engine series, advisory), `other`
 * the rest (diffs, health, exports); null for a cheap answer.
 */
export type HeavyKind = 'step' | 'window' | 'run' | 'other';

export function heavyKind(path: string, query: URLSearchParams): HeavyKind | null {
  if (CHEAP_PATHS.test(path) || STEP_PREVIEW.test(path)) return null;
  if (LANE_WINDOW_PATHS.test(path)) return query.has('lanes') && query.has('t0') && query.has('t1') ? null : query.has('t0') && query.has('t1') ? 'window' : 'run';
  if (path.startsWith('/api/rollout/')) return 'step';
  if (path.startsWith('/api/timeline/') || path === '/api/advisory' || path === '/api/rlsight/advisory') return 'run';
  return 'other';
}

/** Lets `width` holders in at once; the others wait in arrival order, at most `bound` of them. */
export class Gate {
  private inside = 0;
  private readonly queue: { admit: () => void; signal: AbortSignal; drop: () => void }[] = [];

  constructor(
    readonly width = HEAVY_AT_ONCE,
    readonly bound = HEAVY_QUEUE,
  ) {}

  /** Holders inside and waiting (for tests and the bench's figures). */
  get load(): { inside: number; waiting: number } {
    return { inside: this.inside, waiting: this.queue.length };
  }

  /**
   * Resolves with the release function once it is this holder's turn; rejects with ServerBusy when the
   * queue is full and with NoOneWaits when `signal` aborts before the turn came.
   */
  enter(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(new NoOneWaits());
    if (this.inside < this.width) {
      this.inside++;
      return Promise.resolve(this.releaser());
    }
    if (this.queue.length >= this.bound) return Promise.reject(new ServerBusy(this.queue.length));
    return new Promise((resolve, reject) => {
      const entry = {
        signal,
        admit: () => {
          signal.removeEventListener('abort', entry.drop);
          this.inside++;
          resolve(this.releaser());
        },
        drop: () => {
          const i = this.queue.indexOf(entry);
          if (i >= 0) this.queue.splice(i, 1);
          reject(new NoOneWaits());
        },
      };
      signal.addEventListener('abort', entry.drop, { once: true });
      this.queue.push(entry);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inside--;
      this.queue.shift()?.admit();
    };
  }
}

/** One gate per kind of heavy answer, each `width` wide. */
export function kindGates(width = HEAVY_AT_ONCE, bound = HEAVY_QUEUE): (kind: HeavyKind) => Gate {
  const gates = new Map<HeavyKind, Gate>();
  return (kind) => {
    let g = gates.get(kind);
    if (g === undefined) gates.set(kind, (g = new Gate(width, bound)));
    return g;
  };
}

/** The process's gates for heavy answers (every run served shares the cores). */
export const heavyGates = kindGates();
