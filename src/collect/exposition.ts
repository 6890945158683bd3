// `GET /metrics` of the collector (prom-client): the latest values of the run as labelled gauges —
// GPU utilization/memory/power per node and GPU, running requests per engine, the last duration of
// each phase — and the collector's own health per stream. Values are read from the collector at
// scrape time, so the exposition costs nothing between scrapes. A latest value is exported only while
// it is recent (a dead engine or a stopped GPU sampler must not look busy forever); when each was last
// taken is exported beside it, so staleness can be queried and alerted on.
import { Counter, Gauge, Registry } from 'prom-client';
import { STREAMS } from '../formats/dashboard/layout.ts';
import type { Collector, SamplesHealth } from './collector.ts';
import { engineValueMaxAgeS } from './sglangScraper.ts';

/** A GPU whose last sample arrived longer ago than this (s) is left out of the GPU gauges. */
export const GPU_MAX_AGE_S = 30;

export interface ExpositionOptions {
  /** An engine whose latest scrape tick is older than this (s) is left out; default `engineValueMaxAgeS()`. */
  engineMaxAgeS?: number;
  /** Epoch seconds, on the clock of the collector and its scraper (tests pin it). */
  now?: () => number;
}

export function collectorRegistry(collector: Collector, opts: ExpositionOptions = {}): Registry {
  const registry = new Registry();
  const latest = collector.latest;
  const now = opts.now ?? (() => Date.now() / 1000);
  const engineMaxAgeS = opts.engineMaxAgeS ?? engineValueMaxAgeS();
  /** `pick` gives null for a value the GPU did not report: its sample is left out. */
  const perGpu = (name: string, help: string, pick: (s: { util: number; mem_mb: number; power_w: number; received: number }) => number | null, fresh = true): void => {
    new Gauge({
      name,
      help,
      labelNames: ['node', 'gpu'],
      registers: [registry],
      collect() {
        this.reset();
        const t = now();
        for (const [node, gpus] of latest.gpus) {
          for (const [gpu, s] of gpus) {
            if (fresh && t - s.received > GPU_MAX_AGE_S) continue;
            const v = pick(s);
            if (v !== null) this.set({ node, gpu: String(gpu) }, v);
          }
        }
      },
    });
  };
  perGpu('rlsight_gpu_utilization_percent', `Latest GPU utilization reported for each GPU (%); absent when its last sample is older than ${GPU_MAX_AGE_S}s.`, (s) => s.util);
  perGpu('rlsight_gpu_memory_used_mib', `Latest used GPU memory reported for each GPU (MiB); absent when its last sample is older than ${GPU_MAX_AGE_S}s.`, (s) => s.mem_mb);
  // a negative power_w is the GPU sampler's mark for a board that reports no power draw
  perGpu('rlsight_gpu_power_watts', `Latest GPU power reported for each GPU (W); absent when the GPU reports none or its last sample is older than ${GPU_MAX_AGE_S}s.`, (s) => (s.power_w >= 0 ? s.power_w : null));
  perGpu('rlsight_gpu_last_sample_timestamp_seconds', 'When the collector last received a sample of each GPU (Unix time).', (s) => s.received, false);
  new Gauge({
    name: 'rlsight_engine_running_requests',
    help: `Running requests of each SGLang engine at its latest scrape (summed over dp ranks); absent once a scrape of it fails or its latest is older than ${engineMaxAgeS}s.`,
    labelNames: ['engine'],
    registers: [registry],
    collect() {
      this.reset();
      const t = now();
      for (const [engine, v] of latest.runningRequests) if (!v.failed && t - v.ts <= engineMaxAgeS) this.set({ engine }, v.value);
    },
  });
  new Gauge({
    name: 'rlsight_engine_last_scrape_timestamp_seconds',
    help: 'When each SGLang engine was last read successfully by the scraper (Unix time of the scrape tick).',
    labelNames: ['engine'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [engine, v] of latest.runningRequests) this.set({ engine }, v.ts);
    },
  });
  new Gauge({
    name: 'rlsight_phase_last_duration_seconds',
    help: 'Duration of the latest completed interval of each phase (s).',
    labelNames: ['phase'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [phase, s] of latest.phaseSeconds) this.set({ phase }, s);
    },
  });

  const perStream = (name: string, help: string, pick: (h: { received: number; dropped: number; rejected: number; written: number; buffered: number }) => number, counter: boolean): void => {
    const config = {
      name,
      help,
      labelNames: ['stream'] as const,
      registers: [registry],
      collect(this: Counter<'stream'> | Gauge<'stream'>) {
        const streams = collector.health().streams;
        this.reset();
        for (const s of STREAMS) {
          const v = pick(streams[s]);
          if (this instanceof Counter) this.inc({ stream: s }, v);
          else this.set({ stream: s }, v);
        }
      },
    };
    if (counter) new Counter(config as never);
    else new Gauge(config as never);
  };
  perStream('rlsight_collector_records_received_total', 'Records accepted from producers and the scraper, per stream.', (h) => h.received, true);
  perStream('rlsight_collector_records_dropped_total', 'Records dropped because a stream held its buffer cap, per stream.', (h) => h.dropped, true);
  perStream('rlsight_collector_records_rejected_total', 'Invalid lines left out of their batch, per stream.', (h) => h.rejected, true);
  perStream('rlsight_collector_records_written_total', 'Records appended to the run directory, per stream.', (h) => h.written, true);
  perStream('rlsight_collector_buffered_records', 'Records held in memory awaiting a flush, per stream.', (h) => h.buffered, false);
  const samplesFigure = (name: string, help: string, pick: (h: SamplesHealth) => number, counter: boolean): void => {
    const config = {
      name,
      help,
      registers: [registry],
      collect(this: Counter | Gauge) {
        const v = pick(collector.health().samples);
        this.reset();
        if (this instanceof Counter) this.inc(v);
        else this.set(v);
      },
    };
    if (counter) new Counter(config as never);
    else new Gauge(config as never);
  };
  samplesFigure('rlsight_collector_samples_received_total', 'Rollout samples accepted from producers.', (h) => h.received, true);
  samplesFigure('rlsight_collector_samples_rejected_total', 'Invalid sample lines left out of their batch.', (h) => h.rejected, true);
  samplesFigure('rlsight_collector_sample_steps_written_total', 'Rollout steps written to samples/ once all their samples were in.', (h) => h.stepsWritten, true);
  samplesFigure('rlsight_collector_sample_step_write_errors_total', 'Rollout step files that could not be written (their samples are kept).', (h) => h.writeErrors, true);
  samplesFigure('rlsight_collector_sample_steps_arriving', 'Rollout steps whose samples are still arriving.', (h) => h.stepsArriving, false);
  new Counter({
    name: 'rlsight_collector_flush_errors_total',
    help: 'Flushes that could not write everything they held.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(collector.health().flushErrors);
    },
  });
  new Gauge({
    name: 'rlsight_collector_last_flush_success_timestamp_seconds',
    help: 'When the last flush that wrote everything it held finished (Unix time; 0 before the first).',
    registers: [registry],
    collect() {
      this.set(collector.health().lastFlushOk ?? 0);
    },
  });
  return registry;
}
