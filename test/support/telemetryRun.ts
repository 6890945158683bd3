// A run model over a telemetry store alone (no dumps): what the timeline answers read. Tests that drive the
// store's warm-up themselves serve it through this.
import type { RunModel } from '../../src/run/model.ts';
import type { TelemetryStore } from '../../src/run/telemetry/store.ts';

/** `decoded` counts the steps asked for (a train step `3` without samples is listed, so the advisory asks for it). */
export function telemetryOnlyRun(store: TelemetryStore, dir: string, decoded = { steps: 0 }): RunModel {
  return {
    format: 'miles',
    dir,
    telemetry: store,
    roots: [dir],
    cacheDir: null,
    rolloutIds: async () => ({ train: [3], eval: [] }),
    step: async (rolloutId: number, evaluation: boolean) => {
      decoded.steps++;
      return { rolloutId, evaluation, samples: [], digests: new Map(), rawRewards: null };
    },
    hasTokenizer: () => false,
    advance: async () => {},
    warnings: () => [],
    close: async () => store.close(),
  } as unknown as RunModel;
}
