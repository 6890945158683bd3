// Opens a run directory with the adapter of its format, and finds run directories under a root (`rlsight
// serve --runs ROOT`). A new format is one adapter folder and one line here.
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { collectedAdapter } from './collected/index.ts';
import { milesAdapter } from './miles/index.ts';
import { withTensorBoard } from './tensorboard/index.ts';
import { readSlimeDump, type SlimeDump } from './slime/dump.ts';
import { slimeAdapter, SlimeRunModel } from './slime/index.ts';
import { DerivedCache, LaterWrites } from './derivedCache.ts';
import { SearchTexts } from './searchTexts.ts';
import { TelemetryStore } from './telemetry/store.ts';
import type { DerivedEntry, OpenRunOptions, OutsideEngineSeries, RunAdapter, RunModel, SearchableText, SearchTextSource } from './model.ts';

export { foreground } from './foreground.ts';
/** Bytes a run's resident telemetry columns may hold unless told otherwise (`--memory-budget`). */
export { DEFAULT_MEMORY_BUDGET } from './telemetry/store.ts';
import { PrometheusEngineSource } from './prometheus/engineSource.ts';

/** Every format rlsight reads, in the order they are tried. */
export const RUN_ADAPTERS: readonly RunAdapter[] = [collectedAdapter, slimeAdapter, milesAdapter];

/** The formats whose files `dir` holds. */
export function runFormats(dir: string): string[] {
  return RUN_ADAPTERS.filter((a) => a.detect(dir)).map((a) => a.format);
}

/** Opens `dir` with the first adapter that recognises it (a directory none recognises opens as an empty miles run). */
export async function openRunModel(dir: string, options: OpenRunOptions = {}): Promise<RunModel> {
  const adapter = RUN_ADAPTERS.find((a) => a.detect(dir)) ?? milesAdapter;
  const model = await adapter.open(dir, options);
  return options.tensorboard === undefined ? model : withTensorBoard(model, options.tensorboard);
}

/**
 * `rlsight serve FILE.pt|GLOB`: the slime rollout dumps a `--save-debug-rollout-data` template wrote, as one
 * run (no telemetry beside loose dump files).
 */
export function openDumpFiles(spec: string): RunModel {
  return SlimeRunModel.fromTemplate(spec);
}

/** One slime rollout dump on its own (`rlsight trace FILE.pt`): its samples as dumped, traces included; errors name it `name`. */
export function openDumpFile(path: string, name = path): Promise<SlimeDump> {
  return readSlimeDump(resolve(path), { name });
}

/**
 * A run's telemetry streams on their own (`rlsight export telemetry`): the store with its hour partitions, read
 * one hour at a time on the calling thread.
 */
export function openTelemetry(dashboardDir: string): TelemetryStore {
  return TelemetryStore.open(dashboardDir, { parseWorkers: 0 });
}

/** `--prometheus URL`: engine series from Prometheus range queries, for a run that scraped none. */
export function openPrometheusEngines(url: string): OutsideEngineSeries {
  return new PrometheusEngineSource(url);
}

/**
 * A run's searchable texts over `source`, kept in memory and, with `cacheDir`, on disk with their indexes;
 * `indexing: false` builds no index (a one-shot scan without a cache has no later use for one).
 */
export function openSearchTexts<T extends SearchableText>(source: SearchTextSource<T>, opts: { indexing?: boolean; cacheDir?: string | null } = {}): SearchTexts<T> {
  return new SearchTexts(source, opts.indexing ?? true, opts.cacheDir ? new DerivedCache(opts.cacheDir) : null);
}

export type { SearchTexts };

/** A derived entry named `name` in `cacheDir`, or null without a cache directory. */
export function openDerivedEntry(cacheDir: string | null, name: string): DerivedEntry | null {
  if (cacheDir === null) return null;
  const cache = new DerivedCache(cacheDir);
  const writes = new LaterWrites();
  return { read: () => cache.read(name), write: (text) => writes.request(() => cache.write(name, text)) };
}

/** How deep below the root run directories are looked for (`ROOT/project/run` is found). */
const MAX_DEPTH = 2;

/** Run directories under `root` (the root itself when it is one), sorted by path; a run's own subfolders are not searched. */
/** Where a run directory's links lead (the path itself when it cannot be resolved): one run, one key. */
export function runDirKey(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

export function discoverRunDirs(root: string, depth = MAX_DEPTH, seen = new Set<string>()): string[] {
  // a folder reached twice (a link to a parent, two links to one run) is searched and served once
  const real = runDirKey(root);
  if (seen.has(real)) return [];
  seen.add(real);
  if (runFormats(root).length > 0) return [root];
  if (depth === 0) return [];
  let names: string[];
  try {
    names = readdirSync(root).sort();
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const p = join(root, name);
    let isDir = false;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      continue;
    }
    if (isDir) out.push(...discoverRunDirs(p, depth - 1, seen));
  }
  return out;
}
