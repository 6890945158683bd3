// A trainer's TensorBoard logdir as a metric source beside a run (`serve DIR --tensorboard LOGDIR`): its
// scalars join the run's metrics on the `tensorboard/step` axis (the writer's global step) and on wall time,
// read again whenever the run is (`--follow` tails files still being written). Their keys are named once, when
// first seen (`TensorBoardNaming`): a folder appearing later renames nothing served, and a scalar named like
// one of the run's own keys is `tensorboard/KEY` rather than a second history under that key.
import { join } from 'node:path';
import type { MetricsRecord, RunModel, StreamName, TelemetrySource } from '../model.ts';
import { TelemetryStore } from '../telemetry/store.ts';
import { TENSORBOARD_STEP_KEY, TensorBoardLogdir, TensorBoardNaming } from '../../formats/tfeventsLogdir.ts';

/** The logdir's scalars as metrics records, one per event, in file order. */
export class TensorBoardMetrics {
  private readonly logdir: TensorBoardLogdir;
  private readonly naming: TensorBoardNaming;
  readonly records: MetricsRecord[] = [];
  readonly keys = new Set<string>();
  /** Grows with every read that found records. */
  version = 0;

  /** `ownKeys`: the run's own metric and step keys, which no scalar's key may share. */
  constructor(dir: string, ownKeys: () => ReadonlySet<string>) {
    this.logdir = new TensorBoardLogdir(dir);
    this.naming = new TensorBoardNaming(this.logdir, ownKeys);
    this.read();
  }

  read(): void {
    const events = this.logdir.read();
    for (const e of events) {
      const metrics = this.naming.metrics(e);
      for (const key in metrics) this.keys.add(key);
      this.records.push({ ts: e.wallTime, step_key: TENSORBOARD_STEP_KEY, step: e.step, metrics });
    }
    if (events.length > 0) this.version++;
  }

  problems(): string[] {
    return this.logdir.problems.map((p) => `tensorboard ${p}`);
  }
}

/** The run's telemetry with the logdir's scalars added to its metrics. */
function telemetryWith(t: TelemetrySource, tb: TensorBoardMetrics): TelemetrySource {
  let merged: { own: number; tb: number; records: MetricsRecord[] } | null = null;
  const records = (): readonly MetricsRecord[] => {
    const own = t.metricsRecords();
    if (merged === null || merged.own !== own.length || merged.tb !== tb.records.length) merged = { own: own.length, tb: tb.records.length, records: [...own, ...tb.records] };
    return merged.records;
  };
  const extra: Partial<TelemetrySource> = {
    metricsRecords: records,
    metricKeys: () => [...new Set([...t.metricKeys(), ...tb.keys])].sort(),
    stepKeys: () => [...new Set([...t.stepKeys(), ...(tb.records.length ? [TENSORBOARD_STEP_KEY] : [])])].sort(),
    hasStream: (s: StreamName) => t.hasStream(s) || (s === 'metrics' && tb.records.length > 0),
    streamVersion: (s: StreamName) => t.streamVersion(s) + (s === 'metrics' ? tb.version : 0),
  };
  return overlay(t, extra);
}

/** `model` with the scalars of the TensorBoard logdir `dir` among its metrics. */
export function withTensorBoard(model: RunModel, dir: string): RunModel {
  // A run that records no telemetry (a slime dump) gets the scalars as its only stream, over an empty store.
  const empty = model.telemetry === null ? TelemetryStore.open(join(model.dir, 'dashboard')) : null;
  const own = model.telemetry ?? empty!;
  const tb = new TensorBoardMetrics(dir, () => new Set([...own.metricKeys(), ...own.stepKeys()]));
  const telemetry = telemetryWith(own, tb);
  const extra: Partial<RunModel> = {
    telemetry,
    advance: async () => {
      await model.advance();
      tb.read();
    },
    warnings: () => [...model.warnings(), ...tb.problems()],
    close: async () => {
      empty?.close();
      await model.close();
    },
  };
  return overlay(model, extra);
}

/** `target` answering with `extra`'s members where it has them, with its own (bound to it) elsewhere. */
function overlay<T extends object>(target: T, extra: Partial<T>): T {
  return new Proxy(target, {
    get(t, p) {
      if (Object.hasOwn(extra, p)) return extra[p as keyof T];
      const v = Reflect.get(t, p, t);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
}
