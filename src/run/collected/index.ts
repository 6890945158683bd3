// A run `rlsight collect` recorded: the telemetry streams under `dashboard/` and the rollout samples under
// `samples/` (one Parquet file per step, see formats/collectedSamples.ts). The samples are served as a slime
// run's are (Rollouts, Sample, Search, Health, Diff, the Trace view when they carry traces).
import { join, resolve } from 'node:path';
import { isInside } from '../../formats/fileAccess.ts';
import { RefusedOption } from '../errors.ts';
import type { OpenRunOptions, RunAdapter, RunModel } from '../model.ts';
import { SlimeRunModel } from '../slime/index.ts';
import { confinedNodeIo } from '../telemetry/io.ts';
import { TelemetryStore } from '../telemetry/store.ts';
import { CollectedSamples, hasCollectedSamples } from './samples.ts';

export async function openCollectedRun(dir: string, opts: OpenRunOptions = {}): Promise<RunModel> {
  const root = resolve(dir);
  const cacheDir = opts.cacheDir !== undefined ? resolve(opts.cacheDir) : null;
  if (cacheDir !== null && isInside(root, cacheDir)) throw new RefusedOption('cacheDir', 'the cache directory must lie outside the run directory (nothing is written inside a run)');
  const telemetry = TelemetryStore.open(join(root, 'dashboard'), { cacheDir: cacheDir ?? undefined, memoryBudget: opts.memoryBudget, io: confinedNodeIo(root) });
  return new SlimeRunModel(new CollectedSamples(root), telemetry, cacheDir, 'collected');
}

/** Tried first: a collected run also has `dashboard/`, which the miles format would claim. */
export const collectedAdapter: RunAdapter = {
  format: 'collected',
  detect: hasCollectedSamples,
  open: openCollectedRun,
};
