// Foreground work (a request being answered) that background work (the telemetry warm-up) yields to:
// on a small machine a warm-up parse started during a request takes the core the answer needs. The
// warm-up waits while a request is in flight and a moment after, but never longer than MAX_DEFER_MS in a
// row, so a steady stream of requests cannot starve it.

/** How long after the last request the background waits before it starts new work, ms. */
export const QUIET_MS = 250;
/** The longest the background defers to requests in a row, ms. */
export const MAX_DEFER_MS = 5_000;
/** How long after the last request the background takes every parse thread (before that it leaves one free for requests), ms. */
export const ALL_THREADS_AFTER_MS = 5_000;

export class Foreground {
  private active = 0;
  /**
   * Requests in flight, readable from any thread: a background parse on a parse thread pauses between its chunks
   * while this is above 0 (see `pauseWhileRequests`), so a request started mid-parse gets the cores.
   */
  readonly inFlight = new Int32Array(new SharedArrayBuffer(4));
  private lastEnd = -Infinity;
  /** When the background began deferring (null: it is not deferring). */
  private deferringSince: number | null = null;

  private readonly started: number;
  private settleFirst!: () => void;
  private readonly first = new Promise<void>((r) => (this.settleFirst = r));
  /** Work waiting for no request to be in flight (see `idle`). */
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly now: () => number = () => performance.now()) {
    this.started = now();
  }

  /** Settles once the process has been asked anything (a viewer is on its way: what it will want can get ready). */
  firstRequest(): Promise<void> {
    return this.first;
  }

  /** Marks a request arrived, whether or not it holds back the background (see `begin`). */
  noteRequest(): void {
    this.settleFirst();
  }

  /** Marks a request begun; call the returned function once it is answered. */
  begin(): () => void {
    this.active++;
    Atomics.store(this.inFlight, 0, this.active);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.active--;
      Atomics.store(this.inFlight, 0, this.active);
      if (this.active === 0) Atomics.notify(this.inFlight, 0);
      this.lastEnd = this.now();
      if (this.active === 0 && this.idleWaiters.length > 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        setImmediate(() => waiters.forEach((w) => w()));
      }
    };
  }

  /**
   * Settles on a later turn once no request is being answered and none has been for `quietMs` (a turn from
   * now when that is already so), or after MAX_DEFER_MS at the latest: for work an answer should not wait for,
   * such as cache writes. A quiet period keeps it off the next request of a client asking one after another.
   */
  idle(quietMs = 0): Promise<void> {
    return new Promise((resolve) => {
      const since = this.now();
      let settled = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const go = (): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        setImmediate(resolve);
      };
      const attempt = (): void => {
        if (settled) return;
        clearTimeout(timer);
        const now = this.now();
        const left = MAX_DEFER_MS - (now - since);
        if (left <= 0) return go();
        if (this.active > 0) {
          this.idleWaiters.push(attempt);
          timer = setTimeout(go, left).unref();
          return;
        }
        const quiet = now - this.lastEnd;
        if (quiet >= quietMs) return go();
        // held open: the work waited for (a cache write) is not dropped by a process with nothing else to do
        timer = setTimeout(attempt, Math.min(quietMs - quiet, left));
      };
      attempt();
    });
  }

  /** Whether any request has been answered yet (a server's first answers are the ones a viewer waits for). */
  answeredAny(): boolean {
    return this.lastEnd > -Infinity;
  }

  /**
   * Milliseconds since the last request was answered (0 while one is being answered); a process's first
   * moments count from its start, when a viewer's first requests are on their way.
   */
  quietForMs(): number {
    const t = this.now();
    return this.active > 0 ? 0 : Math.min(t - this.lastEnd, t - this.started);
  }

  /** Whether background work may start now (else it should ask again a little later). */
  backgroundMayRun(): boolean {
    const t = this.now();
    const busy = this.active > 0 || t - this.lastEnd < QUIET_MS;
    if (!busy) {
      this.deferringSince = null;
      return true;
    }
    this.deferringSince ??= t;
    if (t - this.deferringSince < MAX_DEFER_MS) return false;
    this.deferringSince = t; // run one step, then defer again
    return true;
  }
}

/**
 * On a background thread: waits while `inFlight` (a Foreground's) counts requests being answered and `wanted`
 * (the thread's pool's: see `wantThread`) counts no read waiting for a thread of the pool, at most `maxMs`.
 * Returns the ms waited.
 */
export function pauseWhileRequests(inFlight: Int32Array, wanted: Int32Array | null, maxMs = MAX_DEFER_MS): number {
  const started = performance.now();
  for (let n = Atomics.load(inFlight, 0); n > 0 && (wanted === null || Atomics.load(wanted, 0) === 0); n = Atomics.load(inFlight, 0)) {
    const left = started + maxMs - performance.now();
    if (left <= 0) break;
    Atomics.wait(inFlight, 0, n, Math.min(left, 100));
  }
  return performance.now() - started;
}

/**
 * Counts a read waiting for a thread of a pool in the pool's `wanted` (+1), or done waiting (-1), and wakes the
 * paused parses (those of other pools look again and go back to their pause).
 */
export function wantThread(wanted: Int32Array, inFlight: Int32Array, delta: 1 | -1): void {
  Atomics.add(wanted, 0, delta);
  Atomics.notify(inFlight, 0);
}

/** The process's requests, as the server marks them and the warm-ups read them. */
export const foreground = new Foreground();
