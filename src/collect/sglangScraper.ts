// Scrapes SGLang engine metrics into the engine_series stream, as miles' collector does: through the
// router's aggregated `/engine_metrics` (each sample names its engine in `worker_addr`), or straight
// from each engine's `/metrics` (the engines of the last topology snapshot). Every sample of one tick
// carries the tick's start time; an engine that fails is skipped for that tick, never filled in.
// `auto` reads the engines a producer reported, and the router while none has.
import { DEFAULT_ENGINE_METRICS, engineLabelsJson, engineSampleLine, KEPT_ENGINE_LABELS, type EngineSample } from '../formats/dashboard/index.ts';
import { parsePromText } from '../formats/prometheus/text.ts';
import type { Logger } from './collector.ts';

/** Normalized names (`:` → `_`) scraped by default, in miles' order. */
export const DEFAULT_METRIC_WHITELIST: readonly string[] = DEFAULT_ENGINE_METRICS;

/** How long one engine's (or the router's) answer is waited for. */
export const SCRAPE_TIMEOUT_S = 5;
/** The scrape interval without `--sglang-scrape-interval`. */
export const DEFAULT_SCRAPE_INTERVAL_S = 2;

/**
 * How old an engine's latest scrape may be and still stand for it: 3 intervals, plus the timeout (a value is
 * stamped with its tick's start, and a slow engine still answering keeps it).
 */
export function engineValueMaxAgeS(intervalS = DEFAULT_SCRAPE_INTERVAL_S): number {
  return 3 * intervalS + SCRAPE_TIMEOUT_S;
}

export type ScrapeMode = 'auto' | 'router' | 'direct';

/** GET returning the body text; throws on a network error, a timeout or a non-2xx status. */
export type FetchText = (url: string, timeoutMs: number) => Promise<string>;

export const fetchText: FetchText = async (url, timeoutMs) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const body = await res.text();
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return body;
};

export interface ScraperOptions {
  mode: ScrapeMode;
  routerAddr?: string;
  /** Direct mode: the engines to poll (the collector's last topology). */
  engineAddrs: () => readonly string[];
  /** Auto mode: the engines a producer reported in its last topology (none: the router is read when known). */
  reportedEngines?: () => readonly string[];
  intervalS?: number;
  timeoutS?: number;
  whitelist?: readonly string[];
  /** Receives each kept sample with its on-disk line. */
  sink: (sample: EngineSample, line: string) => void;
  /** A scrape of this engine (null: of the router) failed or was unreadable. */
  failed?: (addr: string | null) => void;
  log: Logger;
  now?: () => number;
  get?: FetchText;
}

/** The same warning at most once per window, so a dead engine does not flood the log. */
class RateLimitedWarnings {
  private readonly last = new Map<string, number>();
  constructor(
    private readonly log: Logger,
    private readonly windowS = 300,
  ) {}

  warn(key: string, message: string, now: number): void {
    const t = this.last.get(key);
    if (t !== undefined && now - t < this.windowS) return;
    this.last.set(key, now);
    this.log('warn', `${message} (further warnings like this suppressed for ${this.windowS}s)`);
  }
}

const MAX_PARALLEL = 8;

/** What kind of failure an error is (`HTTP 503`, `timeout`, `ECONNREFUSED`, …): a new kind is warned about at once. */
function failureKind(err: Error): string {
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'timeout';
  if (/^HTTP \d+$/.test(err.message)) return err.message;
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : err.name;
}

export class SglangScraper {
  mode: ScrapeMode;
  routerAddr: string | undefined;
  private readonly whitelist: Set<string>;
  private readonly warnings: RateLimitedWarnings;
  private readonly now: () => number;
  private readonly get: FetchText;
  private timer: NodeJS.Timeout | null = null;
  /** Ticks not finished yet (a slow engine keeps its tick open past the next one). */
  private readonly running = new Set<Promise<void>>();
  /** URLs whose fetch has not returned: the next ticks skip them, so one slow engine holds back no other. */
  private readonly inFlight = new Set<string>();
  private stopped = false;
  /** What auto mode read on its last tick, to log a change once. */
  private autoChoice: string | null = null;
  ticks = 0;

  constructor(private readonly opts: ScraperOptions) {
    this.mode = opts.mode;
    this.routerAddr = opts.routerAddr;
    const list = opts.whitelist ?? DEFAULT_METRIC_WHITELIST;
    if (list.length === 0) throw new Error('the scraped metric whitelist is empty');
    this.whitelist = new Set(list);
    this.warnings = new RateLimitedWarnings(opts.log);
    this.now = opts.now ?? (() => Date.now() / 1000);
    this.get = opts.get ?? fetchText;
  }

  private get timeoutMs(): number {
    return (this.opts.timeoutS ?? SCRAPE_TIMEOUT_S) * 1000;
  }

  /** Where this tick reads: the router, or these engines. */
  private source(): { router: true } | { router: false; addrs: readonly string[] } {
    if (this.mode === 'router') return { router: true };
    if (this.mode === 'direct') return { router: false, addrs: this.opts.engineAddrs() };
    const reported = this.opts.reportedEngines?.() ?? [];
    let choice: string;
    let source: { router: true } | { router: false; addrs: readonly string[] };
    if (reported.length > 0) {
      choice = `reading the ${reported.length} engine(s) of the reported topology directly`;
      source = { router: false, addrs: reported };
    } else if (this.routerAddr !== undefined) {
      choice = `no topology reported; reading the router's ${this.routerAddr}/engine_metrics`;
      source = { router: true };
    } else {
      // a topology from before a restart, if any
      const addrs = this.opts.engineAddrs();
      choice =
        addrs.length > 0
          ? `no topology reported and no router known; reading the ${addrs.length} engine(s) of the last topology`
          : 'no topology reported and no router known yet (pass --sglang-router or have a producer report one); nothing to scrape';
      source = { router: false, addrs };
    }
    if (choice !== this.autoChoice) {
      this.autoChoice = choice;
      this.opts.log('info', `sglang scrape mode auto: ${choice}`);
    }
    return source;
  }

  /** One tick: fetch, parse, keep whitelisted samples stamped with `tickTs`. Returns the samples kept. */
  async scrapeOnce(tickTs = this.now()): Promise<number> {
    let kept = 0;
    const source = this.source();
    if (source.router) {
      if (this.routerAddr === undefined) {
        this.warnings.warn('no-router', 'router scrape mode but no router known yet (pass --sglang-router or have a producer register it)', tickTs);
        return 0;
      }
      const url = `${this.routerAddr}/engine_metrics`;
      if (this.inFlight.has(url)) return 0;
      const text = await this.fetchOnce(url, tickTs, null, `sglang metrics scrape of ${url}`, 'leaving a gap');
      if (text === null) return 0;
      kept += this.keep(text, null, tickTs, url);
    } else {
      const addrs = source.addrs.filter((a) => !this.inFlight.has(`${a}/metrics`));
      const texts: (string | null)[] = new Array(addrs.length).fill(null);
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < addrs.length) {
          const i = next++;
          texts[i] = await this.fetchOnce(`${addrs[i]}/metrics`, tickTs, addrs[i], `scrape of engine ${addrs[i]}`, 'skipping this tick');
        }
      };
      await Promise.all(Array.from({ length: Math.min(MAX_PARALLEL, Math.max(1, addrs.length)) }, worker));
      addrs.forEach((addr, i) => {
        const t = texts[i];
        if (t !== null) kept += this.keep(t, addr, tickTs, `${addr}/metrics`);
      });
    }
    this.ticks++;
    return kept;
  }

  /** The body of `url`, or null (warned once per kind of failure, and reported to `failed`). */
  private async fetchOnce(url: string, ts: number, addr: string | null, what: string, consequence: string): Promise<string | null> {
    this.inFlight.add(url);
    try {
      return await this.get(url, this.timeoutMs);
    } catch (err) {
      const e = err as Error;
      this.warnings.warn(`${url} ${failureKind(e)}`, `${what} failed (${e.name === 'TimeoutError' ? `no answer within ${this.timeoutMs / 1000}s` : e.message}); ${consequence}`, ts);
      this.opts.failed?.(addr);
      return null;
    } finally {
      this.inFlight.delete(url);
    }
  }

  private keep(text: string, addr: string | null, ts: number, url: string): number {
    let samples;
    try {
      samples = parsePromText(text).samples;
    } catch (err) {
      this.warnings.warn(`parse ${url}`, `metrics from ${url} are not Prometheus text (${(err as Error).message}); skipping this tick`, ts);
      this.opts.failed?.(addr);
      return 0;
    }
    // all-or-nothing per source: a half-parsed engine would look like a partial tick
    const out: EngineSample[] = [];
    for (const s of samples) {
      const metric = s.name.replaceAll(':', '_');
      if (!this.whitelist.has(metric)) continue;
      const engine = addr ?? s.labels.worker_addr;
      if (engine === undefined) {
        this.warnings.warn(`no worker_addr ${metric}`, `router sample for ${metric} lacks worker_addr; dropping`, ts);
        continue;
      }
      const labels: Record<string, string> = {};
      for (const k in s.labels) if ((KEPT_ENGINE_LABELS as readonly string[]).includes(k)) labels[k] = s.labels[k];
      out.push({ ts, addr: engine, metric, labels, value: s.value });
    }
    for (const r of out) this.opts.sink(r, engineSampleLine(r.ts, r.addr, r.metric, engineLabelsJson(r.labels), r.value));
    return out.length;
  }

  /**
   * Ticks every interval (at least 0.5 s apart) until `stop()`. A tick does not wait for the previous one:
   * an engine still answering it is skipped, so the others keep their interval.
   */
  start(): void {
    if (this.timer !== null || this.running.size > 0) return;
    this.stopped = false;
    const tick = (): void => {
      const started = this.now();
      const run: Promise<void> = this.scrapeOnce(started)
        .then(
          () => undefined,
          (err: Error) => this.warnings.warn('tick', `sglang metrics scrape failed (${err.message}); leaving a gap`, started),
        )
        .finally(() => this.running.delete(run));
      this.running.add(run);
      if (!this.stopped) this.timer = setTimeout(tick, Math.max(0.5, this.opts.intervalS ?? DEFAULT_SCRAPE_INTERVAL_S) * 1000);
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await Promise.all([...this.running]);
  }
}
