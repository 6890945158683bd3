import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fixturePath } from '../../test/support/fixtures.ts';
import { generateDemoRun } from '../demo/index.ts';
import { PACKAGE_ROOT } from '../ownFiles.ts';
import { openRunModel } from '../run/open.ts';
import { readSlimeDump } from '../run/slime/dump.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import type { Phase } from '../wire/timeline.ts';
import { MAX_WINDOW_S } from './limits.ts';
import { MAX_ARG_CHARS, perfettoTrace, phaseTracks, type ChromeTrace, type TraceEvent, type TraceInput } from './perfetto.ts';
import { perfettoForRun, perfettoSpan, sampleEdges } from './perfettoExport.ts';
import type { RunAnswers } from './runAnswers.ts';
import { answersFor } from './slimeAnswers.ts';
import { traceDetails, traceView } from './slimeTraceView.ts';
import { pyNumber, sampleTrace, type SlimeSample, type SlimeValue } from '../run/model.ts';

const tmp = mkdtempSync(join(tmpdir(), 'rlsight-perfetto-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** The trace-event format's rules that Perfetto's JSON importer relies on. */
function checkSchema(trace: ChromeTrace): Record<string, number> {
  assert.ok(Array.isArray(trace.traceEvents));
  const counts: Record<string, number> = {};
  const open = new Map<string, TraceEvent>();
  const processNames = new Set<number>();
  const threadNames = new Set<string>();
  const used = new Set<string>();
  for (const e of trace.traceEvents) {
    counts[e.ph] = (counts[e.ph] ?? 0) + 1;
    assert.ok(['b', 'e', 'i', 'X', 'C', 'M'].includes(e.ph), `ph ${e.ph}`);
    assert.equal(typeof e.name, 'string');
    assert.ok(Number.isInteger(e.pid) && e.pid > 0, `pid ${e.pid}`);
    assert.ok(Number.isInteger(e.tid) && e.tid >= 0, `tid ${e.tid}`);
    assert.ok(Number.isFinite(e.ts), `ts ${e.ts}`);
    if (e.ph === 'M') {
      assert.ok(['process_name', 'thread_name', 'process_sort_index', 'thread_sort_index'].includes(e.name));
      if (e.name === 'process_name') processNames.add(e.pid);
      if (e.name === 'thread_name') threadNames.add(`${e.pid}:${e.tid}`);
      if (e.name.endsWith('_sort_index')) assert.ok(Number.isInteger(e.args?.sort_index));
      else assert.equal(typeof e.args?.name, 'string');
      continue;
    }
    used.add(`${e.pid}:${e.tid}`);
    if (e.ph === 'X') assert.ok(Number.isFinite(e.dur) && e.dur! >= 0);
    if (e.ph === 'C') assert.ok(Object.values(e.args ?? {}).every((v) => typeof v === 'number' && Number.isFinite(v)));
    if (e.ph === 'i') assert.equal(e.s, 't');
    if (e.ph === 'b') {
      assert.ok(e.id && e.cat);
      assert.ok(!open.has(`${e.cat}:${e.id}`), `async id ${e.id} reused`);
      open.set(`${e.cat}:${e.id}`, e);
    }
    if (e.ph === 'e') {
      const b = open.get(`${e.cat}:${e.id}`);
      assert.ok(b, `end without begin ${e.id}`);
      assert.equal(b.name, e.name);
      assert.equal(b.pid, e.pid);
      assert.ok(e.ts >= b.ts);
      open.delete(`${e.cat}:${e.id}`);
    }
  }
  assert.equal(open.size, 0, 'every async begin has its end');
  for (const k of used) {
    assert.ok(processNames.has(Number(k.split(':')[0])), `process ${k} named`);
    if (!k.endsWith(':0')) assert.ok(threadNames.has(k), `thread ${k} named`);
  }
  return counts;
}

/** A dump's trace answer with every traced row's details, as the export reads them. */
async function traceInput(file: string): Promise<TraceInput & { samples: SlimeSample[] }> {
  const d = await readSlimeDump(file);
  const answer = traceView(d.samples, d);
  return { answer, details: new Map(answer.rows.map((r) => [r.row, traceDetails(d.samples[r.row])!])), samples: d.samples };
}

/** Thread names by `pid:tid`. */
const threadNames = (trace: ChromeTrace): Map<string, string> => new Map(trace.traceEvents.filter((e) => e.name === 'thread_name').map((e) => [`${e.pid}:${e.tid}`, String(e.args!.name)]));

test('slime traces: each sample’s spans are complete slices on its own threads, nested, with every attr as args', async () => {
  const traces = [];
  for (const f of ['0.pt', '1.pt', 'eval_0.pt']) traces.push(await traceInput(fixturePath('slime-trace', 'rollout_data', f)));
  const trace = perfettoTrace({ traces });
  const counts = checkSchema(trace);
  // No async slices: Perfetto puts those on global tracks keyed by cat/id/name, away from their sample.
  assert.equal(counts.b, undefined);
  assert.equal(counts.e, undefined);
  const names = threadNames(trace);
  let details = 0;
  for (const { answer, details: byRow } of traces) {
    for (const row of answer.rows) {
      const label = `sample #${row.sample_index}${row.group_index !== null ? ` g${row.group_index}` : ''} ${row.status}`;
      for (const [i, d] of byRow.get(row.row)!.items.entries()) {
        details++;
        // every item of the dump is written, under its own sample, with its attrs
        const point = d.kind === 'point' || d.kind === 'orphan';
        const found = trace.traceEvents.filter((e) => e.ph === (point ? 'i' : 'X') && e.args?.sample_index === row.sample_index && e.args?.trace_id === row.trace_id && Math.abs(e.ts - Math.round(d.start * 1e6)) <= (d.kind === 'pd' ? 2 : 1));
        const mine = found.filter((e) => (d.kind === 'pd' ? e.cat === 'pd' && e.args![Object.keys(d.attrs)[0]] !== undefined : (e.args!.span_id ?? null) === d.span_id && e.name.startsWith(d.name)));
        assert.ok(mine.length >= 1, `${answer.rollout_id} row ${row.row} item ${i} ${d.kind} ${d.name} not written`);
        const e = mine[0];
        assert.ok(names.get(`${e.pid}:${e.tid}`)!.startsWith(label), `${d.name} on ${names.get(`${e.pid}:${e.tid}`)}, not under ${label}`);
        if (point) assert.deepEqual(e.args!.attrs, d.attrs);
        else for (const [k, v] of Object.entries(d.attrs)) assert.deepEqual(e.args![k], v, `${d.name} ${k}`);
      }
    }
  }
  assert.equal((counts.X ?? 0) + (counts.i ?? 0), details);
  // Every sample's track nests properly, and a track's slices come parents first.
  assert.deepEqual(badlyNested(trace), []);
  const byTrack = new Map<string, TraceEvent[]>();
  for (const e of trace.traceEvents) if (e.ph === 'X') byTrack.set(`${e.pid}:${e.tid}`, [...(byTrack.get(`${e.pid}:${e.tid}`) ?? []), e]);
  for (const list of byTrack.values()) for (let i = 1; i < list.length; i++) assert.ok(list[i - 1].ts < list[i].ts || (list[i - 1].ts === list[i].ts && list[i - 1].dur! >= list[i].dur!));
  // Sample 16 (rollout 1): its spans, its [P]/[D] segments and its PD spans as slime recorded them, on its threads.
  const s16 = [...names.entries()].filter(([, n]) => n.startsWith('sample #16 g4 completed')).map(([, n]) => n);
  assert.deepEqual(s16, ['sample #16 g4 completed', 'sample #16 g4 completed [P]', 'sample #16 g4 completed [D]', 'sample #16 g4 completed PD as recorded']);
  const gen = trace.traceEvents.find((e) => e.ph === 'X' && e.name === 'sglang_generate' && e.args?.sample_index === 16)!;
  assert.equal((gen.args!.end_attrs as Record<string, unknown>).prompt_tokens, 148);
  assert.equal(typeof gen.args!.span_id, 'string');
  const fwd = trace.traceEvents.find((e) => e.name === '[P] forward' && e.args?.sample_index === 16)!;
  assert.equal((fwd.args!.recorded_as as Record<string, unknown>).name, 'sglang_pd_prefill_forward');
  const rec = trace.traceEvents.find((e) => e.name === 'sglang_pd_prefill' && e.args?.sample_index === 16)!;
  assert.equal(rec.cat, 'pd_recorded');
  assert.deepEqual(rec.args!.end_attrs, { phase: 'prefill', duration_s: 0.09103250503540039 });
  // Instants stay on the sample's first thread.
  const summary = trace.traceEvents.find((e) => e.ph === 'i' && e.name === 'sglang_pd_summary' && e.args?.sample_index === 16)!;
  assert.equal(names.get(`${summary.pid}:${summary.tid}`), 'sample #16 g4 completed');
  assert.equal((summary.args!.attrs as Record<string, unknown>).pd_transfer_total_mb, 13.875);
  // A window keeps what overlaps it.
  const t0 = traces[0].answer.t0;
  const windowed = perfettoTrace({ traces, t0, t1: t0 + 1 });
  checkSchema(windowed);
  assert.deepEqual(badlyNested(windowed), []);
  assert.ok(windowed.traceEvents.length < trace.traceEvents.length);
});

test('slime traces: spans that overlap without nesting go to further threads of their sample', async () => {
  const d = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', '0.pt'));
  // a reward_model span that outruns its generate_and_rm parent (a task that ended after its caller gave up)
  const sample = d.samples[0];
  const events = sampleTrace(sample)!.events as Record<string, unknown>[];
  const end = events.find((e) => e.type === 'span_end' && e.name === 'reward_model')!;
  end.ts = (pyNumber(end.ts as SlimeValue) ?? 0) + 1;
  const answer = traceView(d.samples, d);
  const trace = perfettoTrace({ traces: [{ answer, details: new Map(answer.rows.map((r) => [r.row, traceDetails(d.samples[r.row])!])) }] });
  checkSchema(trace);
  assert.deepEqual(badlyNested(trace), []);
  const names = threadNames(trace);
  const label = `sample #${sample.key} g${pyNumber(sample.fields.group_index)} ${sample.fields.status}`;
  const rm = trace.traceEvents.find((e) => e.ph === 'X' && e.name === 'reward_model' && e.args?.sample_index === sample.key)!;
  assert.equal(names.get(`${rm.pid}:${rm.tid}`), `${label} #2`);
  const parent = trace.traceEvents.find((e) => e.ph === 'X' && e.args?.span_id === rm.args!.parent_span_id)!;
  assert.equal(names.get(`${parent.pid}:${parent.tid}`), label);
  // a sample's threads are consecutive, sorted by their tid
  const tids = [...names.entries()].filter(([, n]) => n.startsWith(`${label}`)).map(([k]) => Number(k.split(':')[1]));
  assert.deepEqual(tids, tids.map((_, i) => tids[0] + i));
  assert.ok(trace.traceEvents.some((e) => e.name === 'thread_sort_index' && e.tid === rm.tid && e.args!.sort_index === rm.tid));
});

test('slime traces: an attr longer than MAX_ARG_CHARS is cut and says so; the others are whole', async () => {
  const input = await traceInput(fixturePath('slime-trace', 'rollout_data', '0.pt'));
  const row = input.answer.rows[0];
  const det = input.details.get(row.row)!;
  const span = det.items.find((d) => d.kind === 'span' && d.name === 'sglang_generate')!;
  const long = 'x'.repeat(MAX_ARG_CHARS + 100);
  (span.attrs.end_attrs as Record<string, unknown>).traceback = long;
  const trace = perfettoTrace({ traces: [input] });
  const e = trace.traceEvents.find((x) => x.ph === 'X' && x.args?.span_id === span.span_id)!;
  const end = e.args!.end_attrs as Record<string, unknown>;
  assert.equal(end.traceback, `${'x'.repeat(MAX_ARG_CHARS)}… (cut: ${MAX_ARG_CHARS + 100} characters in all)`);
  assert.ok(Object.keys(end).length > 1);
});

test('compute timeline: phases as slices, GPU util and engine series as counters', () => {
  const trace = perfettoTrace({
    phases: [
      { name: 'actor_train', t0: 100, t1: 110, node: '10.0.0.1', gpu: 0, rank: 0, role: 'train' },
      { name: 'log_probs', t0: 95, t1: 100, node: '10.0.0.1', gpu: 1, rank: 1, role: 'train' },
    ],
    gpu: { lanes: { '10.0.0.1:0': { ts: [100, 101, 102], util: [50, NaN, 70], mem_mb: [1, 1, 1], power_w: [1, 1, 1] } } },
    engine: { sglang_num_running_reqs: [{ addr: 'http://10.0.0.2:30000', labels: {}, ts: [100, 101], value: [3, NaN] }] },
  });
  const counts = checkSchema(trace);
  assert.equal(counts.X, 2);
  assert.equal(counts.C, 3); // two finite util samples, one engine point
  const slice = trace.traceEvents.find((e) => e.ph === 'X' && e.name === 'actor_train')!;
  assert.equal(slice.ts, 100e6);
  assert.equal(slice.dur, 10e6);
});

test('rlsight export perfetto over the miles fixture and a slime run', () => {
  for (const [dir, expectX] of [[fixturePath('miles-demo', 'run'), true], [fixturePath('slime-trace-legacy-pd'), false]] as const) {
    const out = join(tmp, `${expectX ? 'miles' : 'slime'}.json`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(PACKAGE_ROOT, 'src', 'cli.ts'), 'export', 'perfetto', '--dump-details', dir, '--out', out], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /wrote \d+ trace events \([\d.]+ MB\)/);
    const counts = checkSchema(JSON.parse(readFileSync(out, 'utf8')));
    if (expectX) assert.ok(counts.X > 0 && counts.C > 0);
    else assert.ok(counts.X > 0 && counts.i > 0 && counts.b === undefined);
  }
  const bad = spawnSync(process.execPath, ['--import', 'tsx', join(PACKAGE_ROOT, 'src', 'cli.ts'), 'export', 'perfetto', '--dump-details', join(tmp, 'nope'), '--out', join(tmp, 'x.json')], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /no such directory/);
});

/** Complete events of one track that start inside another and end after it: Perfetto drops them. */
function badlyNested(trace: ChromeTrace): TraceEvent[] {
  const tracks = new Map<string, TraceEvent[]>();
  for (const e of trace.traceEvents) {
    if (e.ph !== 'X') continue;
    const k = `${e.pid}:${e.tid}`;
    tracks.set(k, [...(tracks.get(k) ?? []), e]);
  }
  const bad: TraceEvent[] = [];
  for (const list of tracks.values()) {
    // Perfetto's order: by start, the longer of two equal starts first (the parent)
    list.sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
    const open: number[] = [];
    for (const e of list) {
      while (open.length > 0 && open[open.length - 1] <= e.ts) open.pop();
      if (open.length > 0 && e.ts + e.dur! > open[open.length - 1]) bad.push(e);
      else open.push(e.ts + e.dur!);
    }
  }
  return bad;
}

const phase = (name: string, t0: number, t1: number, rank = 0, gpu = 0): Phase => ({ name, t0, t1, node: '10.0.0.1', gpu, rank, role: rank < 0 ? 'derived' : 'train' });

test('phases that overlap without nesting go to further tracks of their GPU; nested ones stay', () => {
  const phases = [phase('train_wait', 0, 10), phase('wake_up', 2, 3), phase('ref_log_probs', 4, 8), phase('log_probs', 7.9, 9), phase('actor_train', 8.5, 12), phase('sleep', 12, 13)];
  const tracks = phaseTracks(phases);
  assert.deepEqual(
    tracks.map((t) => t.map((p) => p.name)),
    [
      ['train_wait', 'wake_up', 'ref_log_probs', 'sleep'],
      ['log_probs'],
      ['actor_train'],
    ],
  );
  // the longer of two equal starts is the parent, whatever the input order
  assert.deepEqual(phaseTracks([phase('inner', 0, 1), phase('outer', 0, 2)]).map((t) => t.map((p) => p.name)), [['outer', 'inner']]);
  const trace = perfettoTrace({ phases });
  assert.deepEqual(badlyNested(trace), []);
  assert.equal(trace.traceEvents.filter((e) => e.ph === 'X').length, phases.length);
  const names = trace.traceEvents.filter((e) => e.name === 'thread_name').map((e) => [e.tid, e.args!.name]);
  assert.deepEqual(names, [
    [1, 'gpu 0 (rank 0)'],
    [2, 'gpu 0 (rank 0) #2'],
    [3, 'gpu 0 (rank 0) #3'],
  ]);
  assert.equal(trace.traceEvents.find((e) => e.name === 'log_probs')!.tid, 2);
});

test('a GPU track is named by the ranks its phases carry, never the -1 of a derived phase', () => {
  const names = (phases: Phase[]): unknown[] => perfettoTrace({ phases }).traceEvents.filter((e) => e.name === 'thread_name').map((e) => e.args!.name);
  assert.deepEqual(names([phase('initialize', 0, 1, -1), phase('actor_train', 1, 2, 3)]), ['gpu 0 (rank 3)']);
  assert.deepEqual(names([phase('initialize', 0, 1, -1, 2), ...[0, 1, 2, 5].map((r, i) => phase('actor_train', 1 + i, 2 + i, r, 2))]), ['gpu 2 (ranks 0-2, 5)']);
  assert.deepEqual(names([phase('initialize', 0, 1, -1, 1), phase('rollout', 1, 2, -1, 1)]), ['gpu 1']);
});

test('sampleEdges finds the first and last sample to a millisecond, reading only hours at the edges', async () => {
  const samples = [1000.25, 5000, 7203.5, 9000.125];
  const asked: [number, number][] = [];
  // like a downsampled series: never every sample, but one when there are any
  const stamps = async (t0: number, t1: number): Promise<number[]> => {
    asked.push([t0, t1]);
    const inside = samples.filter((t) => t >= t0 && t <= t1);
    return inside.length > 1 ? [inside[1]] : inside;
  };
  const [first, last] = (await sampleEdges([0, 20000], stamps))!;
  assert.ok(Math.abs(first - 1000.25) <= 1e-3 && first >= 1000.25, `${first}`);
  assert.ok(Math.abs(last - 9000.125) <= 1e-3 && last <= 9000.125, `${last}`);
  assert.ok(asked.every(([a, b]) => b - a <= 3600));
  assert.ok(asked.length < 120, `${asked.length} asks`);
  assert.equal(await sampleEdges([0, 20000], async () => []), null);
});

// The demo run as `rlsight demo` writes it: phases that overlap on a GPU, and metrics that begin long before
// the telemetry.
let demoDir = '';
let demo: RunAnswers;
before(async () => {
  demoDir = join(tmp, 'demo');
  await generateDemoRun(demoDir, { historySteps: 194, now: 1_796_656_350 });
  demo = answersFor(await openRunModel(demoDir));
});
after(() => demo?.close());

test('demo run: every phase is a slice, none improperly nested on its track, tracks named by rank', async () => {
  const trace = await perfettoForRun(demo);
  checkSchema(trace);
  const phases = (await demo.phases({})).phases;
  const slices = trace.traceEvents.filter((e) => e.ph === 'X');
  assert.equal(slices.length, phases.length);
  const key = (name: string, ts: number, dur: number): string => `${name} ${ts} ${dur}`;
  assert.deepEqual(slices.map((e) => key(e.name, e.ts, e.dur!)).sort(), phases.map((p) => key(p.name, Math.round(p.t0 * 1e6), Math.round(p.t1 * 1e6) - Math.round(p.t0 * 1e6))).sort());
  assert.deepEqual(badlyNested(trace), []);
  // the run has phases one track per GPU would lose
  const lanes = [...new Set(phases.map((p) => `${p.node}:${p.gpu}`))];
  const oneTrack = phases.map((p): TraceEvent => ({ name: p.name, ph: 'X', ts: Math.round(p.t0 * 1e6), dur: Math.round(p.t1 * 1e6) - Math.round(p.t0 * 1e6), pid: 1, tid: lanes.indexOf(`${p.node}:${p.gpu}`) }));
  assert.ok(badlyNested({ traceEvents: oneTrack, displayTimeUnit: 'ms', otherData: {} }).length > 50);
  const threads = trace.traceEvents.filter((e) => e.name === 'thread_name').map((e) => String(e.args!.name));
  assert.ok(threads.some((n) => n.endsWith(' #2')), 'some GPU needs a second track');
  // the app's labels: g0 is rank 0, g15 rank 15; no track says -1
  const ranks = new Map<string, Set<number>>();
  for (const p of phases) if (p.rank >= 0) ranks.set(`${p.node}:${p.gpu}`, (ranks.get(`${p.node}:${p.gpu}`) ?? new Set()).add(p.rank));
  assert.equal(ranks.size, 16);
  const nodes = new Map(trace.traceEvents.filter((e) => e.name === 'process_name').map((e) => [e.pid, String(e.args!.name).replace(/^node /, '')]));
  for (const e of trace.traceEvents.filter((x) => x.name === 'thread_name' && !String(x.args!.name).includes('#'))) {
    const [r] = ranks.get(`${nodes.get(e.pid)}:${e.tid - 1}`)!;
    assert.equal(e.args!.name, `gpu ${e.tid - 1} (rank ${r})`);
  }
  assert.ok(!threads.some((n) => n.includes('-1')));
});

test('demo run: the span of what the export draws, and a window of any width', async () => {
  const meta = await demo.meta({ follow: false, useUtilizationOverview: false });
  const [r0, r1] = meta.time_range!;
  // what the export draws, read whole from the files
  const store = TelemetryStore.open(join(demoDir, 'dashboard'));
  const ends = (blocks: { length: number; ts: ArrayLike<number> }[]): [number, number] => {
    let lo = Infinity;
    let hi = -Infinity;
    for (const b of blocks) for (let i = 0; i < b.length; i++) [lo, hi] = [Math.min(lo, b.ts[i]), Math.max(hi, b.ts[i])];
    return [lo, hi];
  };
  const gpu = ends(store.gpuUtilBlocks());
  const engine = ends(store.engineSeriesBlocks());
  const phases = (await demo.phases({})).phases;
  const lo = Math.min(gpu[0], engine[0], ...phases.map((p) => p.t0));
  const hi = Math.max(gpu[1], engine[1], ...phases.map((p) => p.t1));
  // the metrics begin hours before the telemetry: the run's time range is no answer to where the export draws
  assert.ok(lo - r0 > MAX_WINDOW_S, `${lo} ${r0}`);
  const span = (await perfettoSpan(demo))!;
  assert.deepEqual(span.kinds, ['phases', 'GPU utilisation', 'engine series']);
  assert.ok(Math.abs(span.t0 - lo) <= 1e-3 && Math.abs(span.t1 - hi) <= 1e-3, `${span.t0} ${span.t1} vs ${lo} ${hi}`);

  // a window before the telemetry (inside the time range) holds nothing: the CLI says where to look
  const cli = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', join(PACKAGE_ROOT, 'src', 'cli.ts'), 'export', 'perfetto', demoDir, ...args], { encoding: 'utf8' });
  const out = join(tmp, 'demo-early.json');
  const early = cli('--t0', String(Math.ceil(r0)), '--t1', String(Math.ceil(r0) + 3600), '--out', out);
  assert.equal(early.status, 1, early.stderr);
  const quoted = `the run's phases, GPU utilisation and engine series span ${span.t0.toFixed(3)} to ${span.t1.toFixed(3)} (Unix seconds); nothing written`;
  assert.ok(early.stderr.includes(quoted), early.stderr);

  // a window wider than a timeline query takes is read in pieces: the whole run, as without one
  const wide = await perfettoForRun(demo, { t0: r0 - 1, t1: r1 + 1 });
  checkSchema(wide);
  const whole = await perfettoForRun(demo);
  const count = (t: ChromeTrace, ph: string) => t.traceEvents.filter((e) => e.ph === ph).length;
  assert.equal(count(wide, 'X'), count(whole, 'X'));
  assert.ok(count(wide, 'C') > 0);
  const all = cli('--t0', String(r0 - 1), '--t1', String(r1 + 1), '--out', join(tmp, 'demo-wide.json'));
  assert.equal(all.status, 0, all.stderr);
  assert.equal(count(JSON.parse(readFileSync(join(tmp, 'demo-wide.json'), 'utf8')), 'X'), count(whole, 'X'));
});

test('demo run: an export shares its counter budget over its lanes and engine series, and holds only the lanes asked', async () => {
  const counters = (t: ChromeTrace, pid?: (name: string) => boolean): number => {
    const names = new Map(t.traceEvents.filter((e) => e.name === 'process_name').map((e) => [e.pid, String(e.args!.name)]));
    return t.traceEvents.filter((e) => e.ph === 'C' && (pid === undefined || pid(names.get(e.pid) ?? ''))).length;
  };
  const whole = await perfettoForRun(demo);
  const small = await perfettoForRun(demo, { counterBudget: 4000 });
  const gpuSeries = Object.keys((await demo.gpu({ maxPoints: 2 })).lanes).length;
  assert.ok(counters(whole) > 8000, `${counters(whole)} counters whole`);
  // half the budget each to the GPUs and the engines, within a few points a series of downsampling
  const engines = counters(small, (n) => n === 'SGLang engines');
  const gpus = counters(small) - engines;
  assert.ok(gpus <= 2000 + 4 * gpuSeries && gpus > 1000, `${gpus} GPU counters`);
  assert.ok(engines <= 2000 * 1.1 && engines > 1000, `${engines} engine counters`);
  // the lanes asked: their phases and samples, no other GPU's
  const phases = (await demo.phases({ lanes: 'g:0-1' })).phases;
  const two = await perfettoForRun(demo, { lanes: 'g:0-1' });
  assert.equal(two.traceEvents.filter((e) => e.ph === 'X').length, phases.length);
  // the GPU counters are those of the lanes asked: named by their process (node) and GPU
  const nodes = new Map(two.traceEvents.filter((e) => e.name === 'process_name').map((e) => [e.pid, String(e.args!.name).replace(/^node /, '')]));
  const gpuNames = new Set(two.traceEvents.filter((e) => e.ph === 'C' && e.name.startsWith('gpu ')).map((e) => `${nodes.get(e.pid)}:${/^gpu (\d+) /.exec(e.name)![1]}`));
  assert.deepEqual([...gpuNames].sort(), [...new Set(phases.map((p) => `${p.node}:${p.gpu}`))].sort());
  await assert.rejects(perfettoForRun(demo, { lanes: 'bogus' }), /lane/);
});
