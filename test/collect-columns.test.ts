// The collector's parsed columns of engine_series and phases hours (`{stream}/{hour}.cols.rlc`): a server
// over a collected run with an empty cache answers from them exactly as from the JSONL, parsing only
// lines appended since they were written, and ignores a file that is stale, damaged or of another version.
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Collector } from '../src/collect/collector.ts';
import { decodeFrame, encodeFrame } from '../src/formats/columnFrame.ts';
import { columnsFile, engineSampleLine, gpuUtilLine, metricsLine, phaseLine } from '../src/formats/dashboard/index.ts';
import { RunAnswers } from '../src/queries/runAnswers.ts';
import { openMilesRun } from '../src/run/miles/index.ts';
import type { TelemetryStore } from '../src/run/telemetry/store.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-collect-columns-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const H = 997200; // 1970-01-12 13:00 UTC
const HOURS = ['19700112_13', '19700112_14', '19700112_15'];
const ENGINES = ['http://10.0.0.1:15000', 'http://10.0.0.2:15000'];
const METRICS = ['sglang_num_running_reqs', 'sglang_token_usage', 'sglang_num_requests_total', 'sglang_num_aborted_requests_total', 'sglang_cache_hit_rate'];

/** engine_series NDJSON for seconds `[from, to)` after H (a scrape every 4 s, two dp ranks), values salted. */
function engineText(from: number, to: number, salt = 0): string {
  let out = '';
  for (let s = from; s < to; s += 4) {
    for (const [e, addr] of ENGINES.entries()) {
      for (const [m, metric] of METRICS.entries()) {
        for (const dp of ['0', '1']) {
          const v = metric.endsWith('_total') ? s * (m + 1) + e : ((s * 7 + m * 13 + e * 5 + salt + Number(dp)) % 97) / (metric === 'sglang_token_usage' ? 100 : 1);
          out += engineSampleLine(H + s + 0.5, addr, metric, JSON.stringify({ dp_rank: dp }), v) + '\n';
        }
      }
    }
  }
  return out;
}

/** phases NDJSON of the steps ending in seconds `[from, to)` (a 300 s step: rollout, then train phases on 4 ranks; open markers). */
function phaseLines(from: number, to: number, salt = 0): { line: string; end: number }[] {
  const out: { line: string; end: number }[] = [];
  for (let t = Math.ceil(from / 300) * 300; t < to; t += 300) {
    out.push({ line: phaseLine({ name: 'rollout', t0: H + t - 290, t1: H + t - 120, node: '10.0.255.1', gpus: [], rank: -1, role: 'rollout_manager' }), end: t - 120 });
    for (let r = 0; r < 4; r++) {
      const late = r === 3 ? 9 + salt : (r + salt) % 3;
      const node = `10.0.0.${1 + (r >> 1)}`;
      out.push({ line: phaseLine({ name: 'train_wait', t0: H + t - 300, t1: H + t - 118 + late, node, gpus: [r & 1], rank: r, role: 'train' }), end: t - 118 + late });
      out.push({ line: phaseLine({ name: 'actor_train', t0: H + t - 100, t1: H + t - 20, node, gpus: [r & 1], rank: r, role: 'train' }), end: t - 20 });
      out.push({ line: phaseLine({ name: 'actor_train', t0: H + t - 100, t1: -1, node, gpus: [r & 1], rank: r, role: 'train' }), end: t - 100 });
    }
  }
  return out.sort((a, b) => a.end - b.end);
}

const phaseText = (from: number, to: number, salt = 0): string => phaseLines(from, to, salt).map((p) => p.line + '\n').join('');

/** A run written by the collector over `[0, seconds)`: flushed every 30 s, clock following the data. */
function collectedRun(seconds: number, opts: { keepOpen?: boolean } = {}): { run: string; dash: string; collector: Collector } {
  const run = join(root, `run${n++}`);
  const dash = join(run, 'dashboard');
  let clock = H;
  const c = new Collector({ dashboardDir: dash, now: () => clock, log: () => {}, args: { rollout_num_gpus: 4, sglang_max_running_requests: 64 } });
  for (let s = 0; s < seconds; s += 30) {
    clock = H + s + 30;
    assert.equal(c.ingest('engine_series', engineText(s, s + 30)).ok, true);
    const ph = phaseText(s, s + 30);
    if (ph) assert.equal(c.ingest('phases', ph).ok, true);
    let gpu = '';
    for (let t = s; t < s + 30; t += 5) for (let g = 0; g < 4; g++) gpu += gpuUtilLine(H + t + 0.25, `10.0.0.${1 + (g >> 1)}`, g & 1, (t + g * 11) % 101, 1000 + g, 100 + g) + '\n';
    assert.equal(c.ingest('gpu_util', gpu).ok, true);
    if (s % 300 === 0) assert.equal(c.ingest('metrics', metricsLine(H + s + 1, 'train/step', s / 300, { 'train/step': s / 300, 'perf/actor_train_mfu': 0.1 + (s % 7) / 100 }) + '\n').ok, true);
    c.flush();
  }
  if (!opts.keepOpen) c.close();
  return { run, dash, collector: c };
}

/** A copy of the run without any rlsight file beside the partitions: what a pass over the raw JSONL answers. */
function rawCopy(run: string): string {
  const copy = `${run}-raw`;
  rmSync(copy, { recursive: true, force: true });
  cpSync(run, copy, { recursive: true, filter: (src) => !src.endsWith('.rlc') });
  return copy;
}

async function answers(run: string, cacheDir?: string, warmed = false): Promise<{ body: unknown; store: TelemetryStore; close(): Promise<void> }> {
  const model = await openMilesRun(run, { cacheDir });
  // An hour the collector's files do not describe (replaced, damaged) is read by the warm-up; answers asked
  // before it has are partial (with their coverage): `warmed` asks once it has read every hour.
  if (warmed) for (let i = 0; i < 100 && (model.telemetry as TelemetryStore).warmUpStep(); i++);
  const a = new RunAnswers(model);
  const [r0, r1] = model.telemetry.timeRange()!;
  const body = {
    advisory: await a.advisory({ lowMfu: 0.15 }),
    advisoryWindow: await a.advisory({ t0: r0 + 1000, t1: r1 - 500, lowMfu: 0.15 }),
    engine: await Promise.all(
      ['sglang_num_running_reqs', 'sglang_token_usage', 'sglang_num_requests_per_s'].flatMap((metric) => [false, true].map((perDpRank) => a.engineSeries({ metric, maxPoints: 100_000, perDpRank }))),
    ),
    phases: [await a.phases({}), await a.phases({ t0: r0 + 3500, t1: r0 + 3700 }), await a.phases({ t0: r1 - 900, t1: r1 })],
    // complete at once: every hour it reads is described by the collector's files
    fleetCoverage: (await a.fleet({ xBuckets: 60 })).coverage ?? 'complete',
  };
  return { body, store: model.telemetry, close: () => model.close() };
}

/** Every file under `dir` with its size and mtime (what a reader must never change). */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .sort()
    .map((p) => {
      const st = statSync(join(dir, p));
      return `${p}:${st.isFile() ? st.size : 'dir'}:${st.mtimeMs}`;
    });
}

const parsed = (s: TelemetryStore): { engine: number; phases: number } => ({ engine: s.stats().engine_series.rowsParsed, phases: s.stats().phases.rowsParsed });

describe('collector-written engine_series and phases columns', () => {
  it('a server with an empty cache answers from them as from the raw JSONL, parses no hour of those streams, and writes nothing in the run', async () => {
    const { run, dash } = collectedRun(3 * 3600 - 600);
    for (const stream of ['engine_series', 'phases'] as const) for (const key of HOURS) assert.ok(existsSync(join(dash, columnsFile(stream, key))), `${stream} ${key}`);
    const want = (await answers(rawCopy(run))).body;
    const before = listing(run);
    for (const cacheDir of [join(root, `cache${n++}`), undefined]) {
      const got = await answers(run, cacheDir);
      try {
        assert.deepEqual(got.body, want);
        assert.deepEqual(parsed(got.store), { engine: 0, phases: 0 });
        assert.ok(got.store.partitions.engine_series.cacheFills >= HOURS.length);
        assert.ok(got.store.partitions.phases.cacheFills >= HOURS.length);
        // the warm-up finds nothing to redo for these streams (only gpu_util hours are left to persist)
        if (cacheDir !== undefined) {
          for (let i = 0; i < 100 && got.store.warmUpStep(); i++);
          assert.deepEqual(parsed(got.store), { engine: 0, phases: 0 });
          const persisted = readdirSync(cacheDir, { recursive: true }).map(String);
          assert.ok(!persisted.some((p) => p.includes('engine_series') || p.includes('phases')), persisted.join(', '));
        }
      } finally {
        await got.close();
      }
    }
    assert.deepEqual(listing(run), before);
  });

  it('lines appended after a file was written are parsed from its offset and folded in; a replaced partition ignores the stale file', async () => {
    const { run, dash } = collectedRun(2 * 3600 + 1200);
    const newest = HOURS[2];
    const extraEngine = engineText(2 * 3600 + 1200, 2 * 3600 + 1500, 3);
    const extraPhases = phaseText(2 * 3600 + 1200, 2 * 3600 + 1500, 1);
    appendFileSync(join(dash, 'engine_series', `${newest}.jsonl`), extraEngine);
    appendFileSync(join(dash, 'phases', `${newest}.jsonl`), extraPhases);
    const grown = await answers(run, join(root, `cache${n++}`));
    try {
      assert.deepEqual(grown.body, (await answers(rawCopy(run))).body);
      // only the appended lines were parsed
      assert.deepEqual(parsed(grown.store), { engine: extraEngine.split('\n').length - 1, phases: extraPhases.split('\n').length - 1 });
    } finally {
      await grown.close();
    }
    // the middle hour's partitions replaced by files with other values (new inodes): their columns files are stale
    for (const [stream, text] of [
      ['engine_series', engineText(3600, 7200, 5)],
      ['phases', phaseText(3600, 7200, 2)],
    ] as const) {
      const p = join(dash, stream, `${HOURS[1]}.jsonl`);
      writeFileSync(`${p}.new`, text);
      renameSync(`${p}.new`, p);
    }
    const replaced = await answers(run, join(root, `cache${n++}`), true);
    try {
      assert.deepEqual(replaced.body, (await answers(rawCopy(run))).body);
      const hourRows = (stream: 'engine_series' | 'phases') => readFileSync(join(dash, stream, `${HOURS[1]}.jsonl`), 'utf8').trimEnd().split('\n').length;
      assert.deepEqual(parsed(replaced.store), { engine: hourRows('engine_series') + extraEngine.split('\n').length - 1, phases: hourRows('phases') + extraPhases.split('\n').length - 1 });
    } finally {
      await replaced.close();
    }
  });

  it('a damaged, truncated or foreign-version file is ignored (never a crash, never a wrong answer)', async () => {
    const { run, dash } = collectedRun(3 * 3600 - 600);
    const want = (await answers(rawCopy(run))).body;
    const file = (stream: string, key: string) => join(dash, `${stream}/${key}.cols.rlc`);
    // first hour: garbage and an empty file; second: cut short; third: a version this build did not write
    writeFileSync(file('engine_series', HOURS[0]), 'RLC1 not a frame');
    writeFileSync(file('phases', HOURS[0]), Buffer.alloc(0));
    for (const stream of ['engine_series', 'phases']) {
      const bytes = readFileSync(file(stream, HOURS[1]));
      writeFileSync(file(stream, HOURS[1]), bytes.subarray(0, Math.floor(bytes.length * 0.6)));
      const { header, columns } = decodeFrame<Record<string, unknown>>(readFileSync(file(stream, HOURS[2])));
      const { columns: _layout, ...fields } = header;
      writeFileSync(file(stream, HOURS[2]), encodeFrame({ ...fields, version: Number(fields.version) + 1 }, columns));
    }
    const got = await answers(run, join(root, `cache${n++}`), true);
    try {
      assert.deepEqual(got.body, want);
      const rows = (stream: string) => HOURS.reduce((sum, key) => sum + readFileSync(join(dash, stream, `${key}.jsonl`), 'utf8').trimEnd().split('\n').length, 0);
      assert.deepEqual(parsed(got.store), { engine: rows('engine_series'), phases: rows('phases') });
    } finally {
      await got.close();
    }
  });
});
