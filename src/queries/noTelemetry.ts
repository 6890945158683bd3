// What the telemetry answers read of a run that records no telemetry streams (a slime dump): a source with
// no streams, so every timeline, metrics and meta answer is the empty one, as for a run whose dashboard/ is empty.
import { EngineSeriesTable, LaneTable, StringTable } from '../formats/columns/interning.ts';
import type { TelemetrySource } from '../run/model.ts';

/** A source holding nothing; its own tables, as a query may intern into them. */
export function noTelemetry(): TelemetrySource {
  return {
    meta: () => null,
    timeRange: () => null,
    hasStream: () => false,
    streamVersion: () => 0,
    laneIndex: () => [],
    laneIndexVersion: 0,
    lanes: new LaneTable(),
    strings: new StringTable(),
    engineSeries: new EngineSeriesTable(),
    metricsRecords: () => [],
    metricKeys: () => [],
    stepKeys: () => [],
    topologySnapshots: () => [],
    topologyWindows: () => [],
    dataBufferSamples: () => [],
    latestDataBufferLength: () => null,
    gpuUtilBlocks: () => [],
    gpuUtilPass: () => [],
    gpuUtilHours: () => [],
    engineSeriesBlocks: () => [],
    engineSeriesPass: () => [],
    engineSeriesReadAhead: () => {},
    engineSeriesBounds: () => null,
    engineMetricsPresent: () => [],
    phaseBlocks: () => [],
    phaseEvents: () => [],
    trajectoryEvents: () => [],
    gpuProcessRows: () => [],
    readOnThreads: async () => {},
    bytesPerHour: () => 0,
    warmUpProgress: () => null,
    foldedView: () => null,
  };
}
