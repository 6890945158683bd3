// Records written through the layout's encoders come back from the telemetry store (its column
// blocks and flat streams) with the same values, whatever the values are.
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  encodeRecord,
  flatFile,
  hourKey,
  isPartitioned,
  partitionFile,
  partitionTs,
  STREAMS,
  type StreamName,
  type StreamRecord,
} from '../src/formats/dashboard/index.ts';
import { TelemetryStore } from '../src/run/telemetry/store.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-layout-'));
after(() => rmSync(root, { recursive: true, force: true }));

const BASE = 1_755_799_200; // an hour boundary
const ts = fc.oneof(fc.double({ min: BASE, max: BASE + 3 * 3600, noNaN: true }), fc.integer({ min: BASE, max: BASE + 3 * 3600 }), fc.integer({ min: BASE * 1000, max: (BASE + 10800) * 1000 }).map((x) => x / 1000));
const text = fc.oneof(fc.constantFrom('10.0.0.1', '10.0.0.10', 'héllo', 'a"b', 'back\\slash', 'tab\t', '日本', ''), fc.string({ maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 6 }));
const int = (min: number, max: number) => fc.integer({ min, max });
const anyDouble = fc.oneof(fc.double(), fc.integer({ min: -1e6, max: 1e6 }), fc.constantFrom(NaN, Infinity, -Infinity, 0, -0.5));

const arbitrary: { [S in StreamName]: fc.Arbitrary<StreamRecord[S]> } = {
  metrics: fc.record({
    ts,
    step_key: fc.option(fc.constantFrom('rollout/step', 'train/step', 'eval/step'), { nil: null }),
    step: fc.option(int(0, 100000), { nil: null }),
    metrics: fc.dictionary(fc.string({ maxLength: 10 }).filter((k) => k !== '__proto__'), fc.oneof(anyDouble, text, fc.boolean()), { maxKeys: 6 }),
  }),
  topology: fc.record({
    ts,
    engines: fc.array(
      fc.record({
        addr: text,
        worker_type: fc.constantFrom('regular', 'prefill', 'decode', 'external'),
        engine_rank: int(-1, 64),
        gpus: fc.array(fc.tuple(text, int(0, 15)), { maxLength: 4 }),
        gpu_uuids: fc.array(fc.option(text, { nil: null }), { maxLength: 4 }),
      }),
      { maxLength: 3 },
    ),
  }),
  data_buffer: fc.record({ ts, length: int(0, 1 << 30) }),
  gpu_util: fc.record({ ts, node: text, gpu: int(0, 1023), util: int(0, 100), mem_mb: int(0, 5_000_000), power_w: int(0, 70_000) }),
  engine_series: fc.record({
    ts,
    addr: text,
    metric: fc.oneof(fc.constantFrom('sglang_num_running_reqs', 'sglang_gen_throughput'), text),
    labels: fc.oneof(fc.constant({}), fc.record({ engine_type: text }), fc.record({ engine_type: text, dp_rank: fc.nat(16).map(String) })),
    value: anyDouble,
  }),
  phases: fc.oneof(
    // A closed phase ends at or after its start (the reader drops one that does not).
    fc
      .record({ name: text, t0: ts, t1: ts, node: text, gpus: fc.array(int(0, 15), { maxLength: 8 }), rank: int(-1, 4096), role: fc.constantFrom('train', 'rollout_manager') })
      .map((e) => ({ ...e, t1: Math.max(e.t0, e.t1) })),
    fc.record({ name: text, t0: ts, t1: fc.constant(-1.0), node: text, gpus: fc.array(int(0, 15), { maxLength: 8 }), rank: int(-1, 4096), role: fc.constantFrom('train', 'rollout_manager') }),
  ),
  trajectories: fc.record({
    ts,
    kind: fc.constantFrom('attempt_start', 'gen_start', 'gen_end', 'tool_start', 'tool_end', 'attempt_end'),
    sample_index: int(-1, 1 << 30),
    group_index: int(-1, 1 << 20),
    turn: int(-1, 50),
    weight_version: text,
    detail: text,
  }),
  gpu_processes: fc.record({ ts, node: text, gpu: int(0, 1023), pid: int(1, 4_194_304), name: text, mem_mb: int(0, 200_000) }),
};

const batches = fc.record(Object.fromEntries(STREAMS.map((s) => [s, fc.array(arbitrary[s] as fc.Arbitrary<unknown>, { maxLength: 25 })])) as unknown as { [S in StreamName]: fc.Arbitrary<StreamRecord[S][]> });

/** Writes every record where the layout files it; returns, per stream, the records in the order a reader meets them. */
function writeRun(dir: string, data: { [S in StreamName]: StreamRecord[S][] }): { [S in StreamName]: StreamRecord[S][] } {
  const out = {} as { [S in StreamName]: StreamRecord[S][] };
  for (const stream of STREAMS) {
    const byFile = new Map<string, { lines: string[]; records: unknown[] }>();
    for (const r of data[stream] as StreamRecord[typeof stream][]) {
      const file = isPartitioned(stream) ? partitionFile(stream, hourKey(partitionTs(stream, r as never))) : flatFile(stream);
      const entry = byFile.get(file) ?? { lines: [], records: [] };
      entry.lines.push(encodeRecord(stream, r));
      entry.records.push(r);
      byFile.set(file, entry);
    }
    const files = [...byFile.keys()].sort();
    for (const f of files) {
      mkdirSync(dirname(join(dir, f)), { recursive: true });
      appendFileSync(join(dir, f), byFile.get(f)!.lines.join('\n') + '\n');
    }
    (out as Record<string, unknown[]>)[stream] = files.flatMap((f) => byFile.get(f)!.records);
  }
  return out;
}

/** fast-check builds records without a prototype; the store builds plain objects. */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

function readBack(store: TelemetryStore): { [S in StreamName]: unknown[] } {
  const gpu: unknown[] = [];
  for (const b of store.gpuUtilBlocks()) {
    for (let i = 0; i < b.length; i++) gpu.push({ ts: b.ts[i], node: store.lanes.node(b.lane[i]), gpu: store.lanes.gpu(b.lane[i]), util: b.util[i], mem_mb: b.memMb(i), power_w: b.powerW(i) });
  }
  const engine: unknown[] = [];
  for (const b of store.engineSeriesBlocks()) {
    for (let i = 0; i < b.length; i++) {
      const k = store.engineSeries.key(b.series[i]);
      engine.push({ ts: b.ts[i], addr: k.addr, metric: k.metric, labels: JSON.parse(k.labelsJson), value: b.value[i] });
    }
  }
  return {
    metrics: [...store.metricsRecords()],
    topology: [...store.topologySnapshots()],
    data_buffer: [...store.dataBufferSamples()],
    gpu_util: gpu,
    engine_series: engine,
    phases: store.phaseEvents(),
    trajectories: store.trajectoryEvents(),
    gpu_processes: store.gpuProcessRows(),
  };
}

describe('dashboard layout round trip through the store', () => {
  it('reads back every record of every stream with the same values', () => {
    let run = 0;
    fc.assert(
      fc.property(batches, (data) => {
        const dir = join(root, `run${run++}`, 'dashboard');
        const want = writeRun(dir, data);
        const store = TelemetryStore.open(dir, { parseWorkers: 0 });
        try {
          assert.deepEqual(store.warnings(), []);
          const got = readBack(store);
          for (const s of STREAMS) assert.deepStrictEqual(plain(got[s]), plain(want[s]), s);
        } finally {
          store.close();
          rmSync(dirname(dir), { recursive: true, force: true });
        }
      }),
      { numRuns: 60 },
    );
  });
});
