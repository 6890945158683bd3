import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openAnswers } from '../../test/support/answers.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { generateSyntheticRun, reusableSyntheticRun } from './syntheticRun.ts';
import { hourKey } from '../formats/dashboard/layout.ts';

const scratch = mkdtempSync(join(tmpdir(), 'rlsight-synthetic-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

describe('generateSyntheticRun', () => {
  it('writes the benchmark shape at a small scale, readable without a warning', async () => {
    const run = join(scratch, 'small');
    const info = await generateSyntheticRun(run, { gpus: 32, hours: 0.75, samplesPerStep: 64, gpuProcesses: true, now: 1_790_001_000 });
    const seconds = 0.75 * 3600;
    assert.equal(info.gpus, 32);
    assert.equal(info.engines, 4);
    assert.equal(info.rows.gpu_util, 32 * seconds, 'one sample per GPU per second');
    assert.equal(info.rows.engine_series, 4 * 23 * ((seconds - 210) / 2), 'every whitelisted metric, every 2 s, once engines are up');
    assert.equal(info.steps, Math.floor((seconds - 240) / 360));
    assert.equal(info.totalRows, Object.values(info.rows).reduce((a, b) => a + b, 0));

    const store = TelemetryStore.open(join(run, 'dashboard'));
    assert.equal(store.laneIndex().length, 32);
    const gpuRows = store.gpuUtilBlocks().reduce((a, b) => a + b.length, 0);
    const engineRows = store.engineSeriesBlocks().reduce((a, b) => a + b.length, 0);
    assert.equal(gpuRows, info.rows.gpu_util);
    assert.equal(engineRows, info.rows.engine_series);
    assert.equal(store.phaseEvents().length, info.rows.phases);
    assert.equal(store.trajectoryEvents().length, info.rows.trajectories);
    assert.equal(store.gpuProcessRows().length, info.rows.gpu_processes);
    assert.deepEqual(store.warnings(), []);
    assert.ok(store.metricKeys().includes('perf/step_time'));

    for (const f of readdirSync(join(run, 'dashboard', 'phases'))) {
      for (const line of readFileSync(join(run, 'dashboard', 'phases', f), 'utf8').trimEnd().split('\n')) {
        const p = JSON.parse(line);
        assert.equal(hourKey(p.t1 === -1 ? p.t0 : p.t1) + '.jsonl', f);
      }
    }
  });

  it('with collectorFiles, also writes the collector’s rollups and columns: a store reads them instead of the engine_series and phases JSONL, and the same rows', async () => {
    const plain = join(scratch, 'plain');
    const collected = join(scratch, 'collected');
    const shape = { gpus: 16, hours: 2.5, samplesPerStep: 32, now: 1_790_001_000 };
    await generateSyntheticRun(plain, shape);
    await generateSyntheticRun(collected, { ...shape, collectorFiles: true });
    const names = (run: string, stream: string) => readdirSync(join(run, 'dashboard', stream)).sort();
    // the same partitions, byte for byte; beside them, one file per hour
    for (const stream of ['gpu_util', 'engine_series', 'phases']) {
      const jsonl = names(plain, stream);
      assert.deepEqual(names(collected, stream).filter((f) => f.endsWith('.jsonl')), jsonl);
      for (const f of jsonl) assert.ok(readFileSync(join(collected, 'dashboard', stream, f)).equals(readFileSync(join(plain, 'dashboard', stream, f))), f);
      const suffix = stream === 'gpu_util' ? '.cells.rlc' : '.cols.rlc';
      assert.deepEqual(names(collected, stream).filter((f) => f.endsWith('.rlc')), jsonl.map((f) => f.replace('.jsonl', suffix)));
    }
    const rowsOf = (run: string) => {
      const store = TelemetryStore.open(join(run, 'dashboard'), { parseWorkers: 0 });
      const engine = store.engineSeriesBlocks().flatMap((b) => Array.from({ length: b.length }, (_, i) => [b.ts[i], store.engineSeries.key(b.series[i]).addr, store.engineSeries.key(b.series[i]).metric, b.value[i]]));
      return { engine, phases: store.phaseEvents(), parsed: store.stats().engine_series.rowsParsed + store.stats().phases.rowsParsed };
    };
    const want = rowsOf(plain);
    const got = rowsOf(collected);
    assert.ok(want.parsed > 0);
    assert.equal(got.parsed, 0);
    assert.deepEqual({ ...got, parsed: 0 }, { ...want, parsed: 0 });
  });

  it('is deterministic for a seed and a clock', async () => {
    const a = await generateSyntheticRun(join(scratch, 'a'), { gpus: 8, hours: 0.2, now: 1_790_000_000 });
    const b = await generateSyntheticRun(join(scratch, 'b'), { gpus: 8, hours: 0.2, now: 1_790_000_000 });
    assert.equal(a.bytes, b.bytes);
    for (const stream of ['gpu_util', 'engine_series', 'phases', 'trajectories']) {
      for (const f of readdirSync(join(scratch, 'a', 'dashboard', stream))) {
        assert.equal(readFileSync(join(scratch, 'a', 'dashboard', stream, f), 'utf8'), readFileSync(join(scratch, 'b', 'dashboard', stream, f), 'utf8'));
      }
    }
  });

  it('optionally dumps steps at scale: every sample joined across its four duplicate ranks', async () => {
    const run = join(scratch, 'dumped');
    const info = await generateSyntheticRun(run, { gpus: 16, hours: 0.2, dumpSteps: 1, dumpSamples: 40, dumpResponseTokens: 300, now: 1_790_002_000 });
    assert.equal(readdirSync(join(run, 'train_data')).length, 16);
    assert.ok(info.bytes > 1_000_000);
    const reader = await openAnswers(run);
    try {
      assert.deepEqual(await reader.rolloutIds(), { train: [0], eval: [] });
      const summary = await reader.summary(0);
      assert.equal(summary.rows.length, 40);
      for (const row of summary.rows) {
        assert.equal(row.alignment_failed, false);
        // Ranks are tp-fastest then dp then pp: shard d lives on ranks 2d, 2d+1, 2d+8, 2d+9.
        const rank = row.dumped_rank as number;
        assert.ok(rank % 2 === 0 && rank < 8, `dumped by the lowest duplicate, got rank ${rank}`);
      }
      const mean = summary.rows.reduce((a, r) => a + (r.response_length as number), 0) / summary.rows.length;
      assert.ok(mean > 200 && mean < 400, `mean response ${mean}`);
      const view = await reader.tokens(0, summary.rows[0].sample_index as number, { start: 0, end: 30 });
      assert.ok(view.token_text!.join('').includes('math assistant'), 'tokens decode to text');
    } finally {
      await reader.close();
    }
  });

  it('is reused while its options match, regenerated when they change, and never replaces a foreign run', async () => {
    const dir = join(scratch, 'reused');
    const first = await reusableSyntheticRun(dir, { gpus: 8, hours: 0.1 });
    assert.equal(first.reused, false);
    assert.equal(first.endTs % 3600, 0, 'ends on a whole hour');
    const again = await reusableSyntheticRun(dir, { gpus: 8, hours: 0.1 });
    assert.deepEqual(again, { ...first, reused: true });
    const bigger = await reusableSyntheticRun(dir, { gpus: 16, hours: 0.1 });
    assert.equal(bigger.reused, false);
    assert.equal(bigger.gpus, 16);
    const foreign = join(scratch, 'foreign');
    mkdirSync(join(foreign, 'dashboard'), { recursive: true });
    await assert.rejects(reusableSyntheticRun(foreign, { gpus: 8, hours: 0.1 }), /without synthetic-run\.json/);
    assert.deepEqual(readdirSync(foreign), ['dashboard']);
  });

  it('rejects a fleet that does not divide into nodes and engines', async () => {
    await assert.rejects(generateSyntheticRun(join(scratch, 'bad'), { gpus: 12 }), /multiple of 8/);
    await assert.rejects(generateSyntheticRun(join(scratch, 'bad'), { gpus: 16, engines: 3 }), /engines must divide/);
    await assert.rejects(generateSyntheticRun(join(scratch, 'bad'), { gpus: 16, hours: 0 }), /hours must be positive/);
  });
});
