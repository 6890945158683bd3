// A run model over a telemetry store alone (no dumps): what the timeline answers read. Tests that drive the
// store's warm-up themselves serve it through this.
import type { RunModel } from '../../src/run/model.ts';
import type { TelemetryStore } from '../../src/run/telemetry/store.ts';

export function telemetryOnlyRun(store: TelemetryStore, dir: string): RunModel {
  return {
    format: 'miles',
    dir,
    telemetry: store,
    roots: [dir],
    cacheDir: null,
    rolloutIds: async () => ({ train: [], eval: [] }),
    hasTokenizer: () => false,
    advance: async () => {},
    warnings: () => [],
    close: async () => store.close(),
  } as unknown as RunModel;
}
