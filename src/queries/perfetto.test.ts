import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fixturePath } from '../../test/support/fixtures.ts';
import { PACKAGE_ROOT } from '../ownFiles.ts';
import { readSlimeDump } from '../run/slime/dump.ts';
import { perfettoTrace, type ChromeTrace, type TraceEvent } from './perfetto.ts';
import { traceView } from './slimeTraceView.ts';

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
      assert.ok(['process_name', 'thread_name', 'process_sort_index'].includes(e.name));
      if (e.name === 'process_name') processNames.add(e.pid);
      if (e.name === 'thread_name') threadNames.add(`${e.pid}:${e.tid}`);
      if (e.name !== 'process_sort_index') assert.equal(typeof e.args?.name, 'string');
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

test('slime traces: every span an async slice, every event an instant, names for every track', async () => {
  const traces = [];
  let spans = 0;
  let points = 0;
  for (const f of ['0.pt', '1.pt', 'eval_0.pt']) {
    const d = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', f));
    const t = traceView(d.samples, d);
    traces.push(t);
    for (const r of t.rows) for (const i of r.items) i.kind === 'point' || i.kind === 'orphan' ? points++ : spans++;
  }
  const trace = perfettoTrace({ traces });
  const counts = checkSchema(trace);
  assert.equal(counts.b, spans);
  assert.equal(counts.e, spans);
  assert.equal(counts.i, points);
  // One process per dump, a thread per traced sample.
  assert.equal(trace.traceEvents.filter((e) => e.name === 'process_name').length, 3);
  assert.equal(trace.traceEvents.filter((e) => e.name === 'thread_name').length, 12 + 12 + 7);
  // PD segments are slices of their own category.
  assert.ok(trace.traceEvents.some((e) => e.cat === 'pd' && e.name === '[P] forward'));
  // A window keeps what overlaps it.
  const t0 = traces[0].t0;
  const windowed = perfettoTrace({ traces, t0, t1: t0 + 1 });
  checkSchema(windowed);
  assert.ok(windowed.traceEvents.length < trace.traceEvents.length);
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
    else assert.ok(counts.b > 0 && counts.i > 0);
  }
  const bad = spawnSync(process.execPath, ['--import', 'tsx', join(PACKAGE_ROOT, 'src', 'cli.ts'), 'export', 'perfetto', '--dump-details', join(tmp, 'nope'), '--out', join(tmp, 'x.json')], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /no such directory/);
});
