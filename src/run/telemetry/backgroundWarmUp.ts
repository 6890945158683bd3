// The telemetry warm-up driven in the background of a served run: every hour not yet in the cache directory
// persisted, newest first, in small steps between requests (the parsing on the parse threads when the run is
// big), so whole-run answers complete without anyone asking for each hour. Nothing to do without a cache
// directory.
import { ALL_THREADS_AFTER_MS, foreground } from '../foreground.ts';
import type { TelemetryStore } from './store.ts';

/**
 * How long after opening the warm-up's first step waits, ms: a server's start and its first answers (the
 * app's first requests) get the CPU to themselves, which on a small machine the warm-up's parses would take.
 */
export const WARM_UP_DELAY_MS = 1000;

export class BackgroundWarmUp {
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly telemetry: TelemetryStore,
    /** Whether the store persists hours (a cache directory); without one there is nothing to warm. */
    private readonly persists: boolean,
  ) {}

  /** Starts (or, for a live run that grew, restarts) the warm-up after `delayMs`; a running one is left as is. */
  start(delayMs = 0): void {
    if (this.timer !== null || !this.persists || this.closed) return;
    const tick = (): void => {
      if (this.closed) return;
      // a request being answered gets the cores: the warm-up starts no parse meanwhile
      if (!foreground.backgroundMayRun()) {
        // but what its threads finished is taken in, so they are free for the requests' own reads
        try {
          this.telemetry.warmUpCollect();
        } catch {
          // persisted again later
        }
        this.timer = setTimeout(tick, 20).unref();
        return;
      }
      let more = false;
      try {
        // while people are asking, one parse thread stays free for their window reads
        more = this.telemetry.warmUpStep(foreground.quietForMs() >= ALL_THREADS_AFTER_MS ? Infinity : 1);
      } catch {
        // a file that cannot be read now is read (and reported) by the query that needs it
      }
      this.timer = more ? setTimeout(tick, 25).unref() : null;
    };
    this.timer = setTimeout(tick, delayMs).unref();
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
