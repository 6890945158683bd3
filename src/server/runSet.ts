// The runs one server answers about: named once, each with its API and (with --follow) its own tail loop;
// with `--runs ROOT` the root is searched again on every follow tick and new runs join the list.
import { createHash } from 'node:crypto';
import { basename, relative, resolve, sep } from 'node:path';
import type { RunSources } from '../queries/runAnswers.ts';
import type { Hono } from 'hono';
import { discoverRunDirs, runDirKey, runFormats } from '../run/open.ts';
import { type AppOptions, type RunSet, type ServedRun, runApi } from './app.ts';
import { EventFeed, FOLLOW_INTERVAL_MS, type Follower, startFollow } from './events.ts';

/** A name made URL-safe: runs of other characters become `-`, with no leading `.` or `-`. */
function urlSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '');
}

/** A URL-safe run name from a folder name, unique among `taken`. */
export function runId(dir: string, taken: ReadonlySet<string>): string {
  const base = urlSafe(basename(dir)) || 'run';
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}-${n}`;
  return id;
}

/** A folder's path below `root` with `/` between its parts; the folder's own name when it is the root. */
export function folderBelow(root: string, dir: string): string {
  const rel = relative(root, dir);
  return rel === '' ? basename(dir) : rel.split(sep).join('/');
}

/**
 * The ids of the run folders `fresh` among `found` (every run folder found under `--runs ROOT`, those served
 * already too), none of them one of `taken`. An id depends on the folders found, never on the order they were
 * found in: the folder's name when no other run folder under the root has that name (so links to it keep
 * working), else its path below the root (`teamA/healthy` is `teamA-healthy`), with a short hash of that path
 * when another folder's path reads the same or the id is taken.
 */
export function rootRunIds(root: string, found: readonly string[], fresh: readonly string[], taken: ReadonlySet<string>): Map<string, string> {
  const leaf = (d: string) => urlSafe(basename(d)) || 'run';
  const named = new Map<string, number>();
  for (const d of found) named.set(leaf(d), (named.get(leaf(d)) ?? 0) + 1);
  const used = new Set(taken);
  const ids = new Map<string, string>();
  const pending: string[] = [];
  for (const d of fresh) {
    if (named.get(leaf(d)) === 1 && !used.has(leaf(d))) {
      ids.set(d, leaf(d));
      used.add(leaf(d));
    } else pending.push(d);
  }
  const byPath = (d: string) => urlSafe(folderBelow(root, d).replace(/\//g, '-')) || 'run';
  const alike = new Map<string, number>();
  for (const d of found) if (named.get(leaf(d))! > 1) alike.set(byPath(d), (alike.get(byPath(d)) ?? 0) + 1);
  for (const d of pending) {
    let id = byPath(d);
    if (used.has(id) || (alike.get(id) ?? 0) > 1) id = `${id}-${createHash('sha1').update(folderBelow(root, d)).digest('hex').slice(0, 6)}`;
    for (let n = 2, base = id; used.has(id); n++) id = `${base}-${n}`;
    ids.set(d, id);
    used.add(id);
  }
  return ids;
}

/**
 * Each folder's name, with as many folders above it as tell it from every other of `dirs` (`a/x/run` and
 * `b/x/run` are `a/x/run` and `b/x/run`, `c/other` is `other`): nothing more of where it lies on the machine.
 */
export function distinctTails(dirs: readonly string[]): string[] {
  const parts = dirs.map((d) => resolve(d).split(sep).filter(Boolean));
  const tail = (i: number, k: number) => parts[i]!.slice(-k).join('/');
  return parts.map((p, i) => {
    let k = 1;
    while (k < p.length && parts.some((_, j) => j !== i && tail(j, k) === tail(i, k))) k++;
    return tail(i, k) || basename(dirs[i]!);
  });
}

export interface ServedRunsOptions extends AppOptions {
  /** Run each run's follow timer (tests pass false and call `tick()`). */
  followTimer?: boolean;
}

/** A run served, and the folder it was found in. */
export type ServedRunDir = ServedRun & { readonly dir: string; readonly folder: string };

/** A run served, with what following it needs: it is opened again once samples turn it into a collected run. */
interface Served {
  readonly id: string;
  run: RunSources;
  readonly feed: EventFeed;
  api: Hono;
  readonly dir: string;
  /** Where it was found, as the app shows it: below `--runs ROOT`, or for a run named on the command line, its name and the folders above it that tell it from the others. */
  folder: string;
  /** The `--runs ROOT` it was found under; undefined for a run named on the command line. */
  readonly root: string | undefined;
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

  /**
   * Serves an open run (the first added answers the reference paths). A run found under `--runs ROOT` comes with
   * that root and its id (see `rootRunIds`); a run named on the command line is named after its folder, made unique.
   */
  add(dir: string, run: RunSources, feed?: EventFeed, found?: { root: string; id: string }): ServedRunDir {
    const abs = resolve(dir);
    const id = found && !this.byId.has(found.id) ? found.id : runId(abs, new Set(this.byId.keys()));
    const f = feed ?? (this.list.length === 0 ? this.options.feed : undefined) ?? new EventFeed();
    const root = found ? resolve(found.root) : undefined;
    const served: Served = { id, run, feed: f, api: runApi(run, f, this.options), dir: abs, folder: root ? folderBelow(root, abs) : basename(abs), root, follower: null, collected: isCollected(abs) };
    if (this.options.follow) {
      served.follower = startFollow({ advance: () => this.advance(served), catalog: () => served.run.catalog(), feed: f, timer: this.options.followTimer ?? true });
    }
    this.list.push(served);
    this.byId.set(id, served);
    if (!root) this.nameNamedFolders();
    return served;
  }

  /** The folders of the runs named on the command line: each its name, with the folders above it that tell it from the others. */
  private nameNamedFolders(): void {
    const named = this.list.filter((r) => r.root === undefined);
    const tails = distinctTails(named.map((r) => r.dir));
    named.forEach((r, i) => (r.folder = tails[i]!));
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
    const abs = resolve(root);
    const dirs = discoverRunDirs(abs);
    const fresh = dirs.filter((d) => !known.has(runDirKey(d)));
    if (fresh.length === 0) return added;
    // ids from every run folder under the root, so they do not depend on which of them was found first
    const ids = rootRunIds(abs, dirs, fresh, new Set(this.byId.keys()));
    for (const dir of fresh) added.push(this.add(dir, await this.open(dir), undefined, { root: abs, id: ids.get(dir)! }));
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
