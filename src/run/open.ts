// Opens a run directory with the adapter of its format. A new format is one adapter folder and one line here.
import { milesAdapter } from './miles/index.ts';
import { slimeAdapter } from './slime/index.ts';
import type { OpenRunOptions, RunAdapter, RunModel } from './model.ts';

/** Every format rlsight reads, in the order they are tried. */
export const RUN_ADAPTERS: readonly RunAdapter[] = [slimeAdapter, milesAdapter];

/** The formats whose files `dir` holds. */
export function runFormats(dir: string): string[] {
  return RUN_ADAPTERS.filter((a) => a.detect(dir)).map((a) => a.format);
}

/** Opens `dir` with the first adapter that recognises it (a directory none recognises opens as an empty miles run). */
export function openRunModel(dir: string, options: OpenRunOptions = {}): Promise<RunModel> {
  const adapter = RUN_ADAPTERS.find((a) => a.detect(dir)) ?? milesAdapter;
  return adapter.open(dir, options);
}
