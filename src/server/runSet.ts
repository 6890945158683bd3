// The runs one server answers about: named once, each with its API and (with --follow) its own tail loop;
// with `--runs ROOT` the root is searched again on every follow tick and new runs join the list.
import { basename, resolve } from 'node:path';
import type { RunSources } from '../queries/runAnswers.ts';
import type { Hono } from 'hono';
import { discoverRunDirs, runDirKey, runFormats } from '../run/open.ts';
import { type AppOptions, type RunSet, type ServedRun, runApi } from './app.ts';
import { EventFeed, FOLLOW_INTERVAL_MS, type Follower, startFollow } from './events.ts';

/** A URL-safe run name from a folder name, unique among `taken`. */
export function runId(dir: string, taken: ReadonlySet<string>): string {
  const base = basename(dir).replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '') || 'run';
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}-${n}`;
  return id;
}

export interface ServedRunsOptions extends AppOptions {
  /** Run each run's follow timer (tests pass false and call `tick()`). */
  followTimer?: boolean;
}

/** A run served, and the folder it was found in. */
export type ServedRunDir = ServedRun & { readonly dir: string };

/** A run served, with what following it needs: it is opened again once samples turn it into a collected run. */
interface Served {
  readonly id: string;
  run: RunSources;
  readonly feed: EventFeed;
  api: Hono;
  readonly dir: string;
  follower: Follower | null;
  collected: boolean;
}

/** How long a run replaced by its reopening keeps its files open for the requests it is still answering. */
const RETIRED_RUN_CLOSE_MS = 60_000;

export class ServedRuns implements RunSet {
  private readonly list: Served[] = [];
  private readonly byId = new Map<string, ServedRun>();
  private watcher: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly options: ServedRunsOptions,
    private readonly open: (dir: string) => Promise<RunSources>,
  ) {}

  runs(): readonly ServedRunDir[] {
    return this.list;
  }

  get(id: string): ServedRun | undefined {
    return this.byId.get(id);
  }

  /** The follower of the first run (what a one-run server exposes). */
  firstFollower(): Follower | null {
    return this.list[0]?.follower ?? null;
  }

  /** Serves an open run (the first added answers the reference paths). */
  add(dir: string, run: RunSources, feed?: EventFeed): ServedRunDir {
    const abs = resolve(dir);
    const id = runId(abs, new Set(this.byId.keys()));
    const f = feed ?? (this.list.length === 0 ? this.options.feed : undefined) ?? new EventFeed();
    const served: Served = { id, run, feed: f, api: runApi(run, f, this.options), dir: abs, follower: null, collected: isCollected(abs) };
    if (this.options.follow) {
      served.follower = startFollow({ advance: () => this.advance(served), catalog: () => served.run.catalog(), feed: f, timer: this.options.followTimer ?? true });
    }
    this.list.push(served);
    this.byId.set(id, served);
    return served;
  }

  /**
   * Reads what a followed run gained. A collector's run holds telemetry before its first samples step, and only
   * samples make it a collected run: it is opened again then, so its samples are served without a restart.
   */
  private async advance(served: Served): Promise<void> {
    if (served.collected || !isCollected(served.dir)) return served.run.advance();
    const retired = served.run;
    served.run = await this.open(served.dir);
    served.api = runApi(served.run, served.feed, this.options);
    served.collected = true;
    setTimeout(() => void retired.close().catch(() => {}), RETIRED_RUN_CLOSE_MS).unref();
  }

  /** Opens and serves every run directory under `root` not served yet; returns the ones added. */
  async discover(root: string): Promise<ServedRunDir[]> {
    // served runs compared by where their links lead: one run reached two ways is served once
    const known = new Set(this.list.map((r) => runDirKey(r.dir)));
    const added: ServedRunDir[] = [];
    for (const dir of discoverRunDirs(resolve(root))) {
      if (known.has(runDirKey(dir))) continue;
      added.push(this.add(dir, await this.open(dir)));
    }
    return added;
  }

  /** Searches `root` again every follow interval, so runs started later are served too (each batch found told to `onAdded`). */
  watch(root: string, intervalMs = FOLLOW_INTERVAL_MS, onAdded: (added: ServedRunDir[]) => void = () => {}): void {
    if (this.watcher) return;
    let busy = false;
    this.watcher = setInterval(() => {
      if (busy) return;
      busy = true;
      this.discover(root)
        .then((added) => {
          if (added.length > 0) onAdded(added);
        })
        .catch((err) => console.error('rlsight: --runs:', err instanceof Error ? err.message : err))
        .finally(() => (busy = false));
    }, intervalMs);
    this.watcher.unref();
  }

  stop(): void {
    if (this.watcher) clearInterval(this.watcher);
    this.watcher = null;
    for (const r of this.list) r.follower?.stop();
  }
}

function isCollected(dir: string): boolean {
  return runFormats(dir)[0] === 'collected';
}
