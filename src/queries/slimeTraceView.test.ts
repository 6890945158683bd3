import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fixturePath } from '../../test/support/fixtures.ts';
import { saveTorch } from '../formats/torch/writer.ts';
import { readSlimeDump } from '../run/slime/dump.ts';
import { sampleTrace } from '../run/model.ts';
import { attrText, pdSegments, STACKED_PD_NOTE, traceDetails, traceView } from './slimeTraceView.ts';

test('current layout: [P]/[D] lanes from the sglang_pd_* child spans, overlapping phases overlap', async () => {
  const d = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', '0.pt'));
  const v = traceView(d.samples, d);
  assert.equal(v.rows.length, 12);
  const row = v.rows.find((r) => r.sample_index === 4)!;
  assert.deepEqual(row.lanes, ['', '', '', '[P]', '[D]']);
  const pd = row.items.filter((i) => i.kind === 'pd');
  const seg = (role: string, name: string) => pd.find((i) => i.role === role && i.name === name)!;
  const bq = seg('P', 'bootstrap_queue');
  const boot = seg('P', 'bootstrap');
  const alloc = seg('P', 'alloc_wait');
  // bootstrap_queue = bootstrap + alloc_wait: the two lie inside it rather than after it.
  assert.ok(boot.inner && alloc.inner && !bq.inner);
  assert.ok(Math.abs(boot.start - bq.start) < 1e-6 && Math.abs(alloc.end - bq.end) < 1e-5);
  const fwd = seg('P', 'forward');
  const tq = seg('P', 'transfer_queue');
  assert.ok(Math.abs(fwd.start - bq.end) < 1e-6, 'forward after the bootstrap queue');
  assert.ok(Math.abs(tq.end - fwd.end) < 1e-6 && tq.start > fwd.start && tq.inner, 'transfer queue inside forward, ending with it');
  // Decode starts with the request too (prealloc runs beside prefill), then transfer, then forward.
  const pre = seg('D', 'prealloc');
  assert.ok(Math.abs(pre.start - bq.start) < 1e-6);
  assert.ok(Math.abs(seg('D', 'transfer').start - pre.end) < 1e-6);
  assert.ok(Math.abs(seg('D', 'forward').start - seg('D', 'transfer').end) < 1e-6);
  // The durations are the dump's: the forward segment is pd_prefill_forward_duration long.
  const details = traceDetails(d.samples[row.row])!;
  const fwdAttr = details.items[fwd.id].attrs.pd_prefill_forward_duration as number;
  assert.ok(Math.abs(fwd.end - fwd.start - fwdAttr) < 2e-6);
  // The synthetic child spans are not drawn again as spans.
  assert.ok(!row.items.some((i) => i.kind === 'span' && i.name.startsWith('sglang_pd_')));
  assert.equal(row.request_ids.length, 1);
  assert.ok(v.notes.some((n) => /overlap/.test(n)));
});

test('legacy flat layout: [P]/[D] per request; open span clipped with its reason; concurrency lanes', async () => {
  const d = await readSlimeDump(fixturePath('slime-trace-legacy-pd', 'rollout_data', '1.pt'));
  const v = traceView(d.samples, d);
  const row = v.rows.find((r) => r.sample_index === 14)!;
  const open = row.items.find((i) => i.kind === 'open')!;
  assert.equal(open.name, 'tool_execution');
  assert.equal(open.clipped_by, 'ancestor_end');
  const toolCall = row.items.find((i) => i.name === 'tool_call')!;
  assert.ok(open.lane > toolCall.lane);
  // Two requests, sequential: their segments share one [P] and one [D] lane.
  assert.equal(row.lanes.filter((l) => l === '[P]').length, 1);
  assert.equal(row.lanes.filter((l) => l === '[D]').length, 1);
  assert.equal(row.request_ids.length, 2);
  // No two spans of one lane overlap.
  for (const r of v.rows) {
    const spans = r.items.filter((i) => i.kind === 'span' || i.kind === 'open');
    for (const a of spans) for (const b of spans) if (a !== b && a.lane === b.lane) assert.ok(a.end <= b.start || b.end <= a.start, `${a.name}/${b.name} overlap in lane ${a.lane}`);
  }
  const prefillOnly = v.rows.find((r) => r.sample_index === 11)!;
  assert.deepEqual(prefillOnly.lanes.filter(Boolean), ['[P]']);
});

test('pdSegments derives the missing outer durations and skips zeros', () => {
  const s = pdSegments(new Map([['pd_prefill_bootstrap_duration', 0.002], ['pd_prefill_alloc_wait_duration', 0], ['pd_prefill_forward_duration', 0.1]]));
  assert.deepEqual(s.map((x) => [x.key, x.start, +x.end.toFixed(9), x.inner]), [
    ['pd_prefill_bootstrap_duration', 0, 0.002, false],
    ['pd_prefill_forward_duration', 0.002, 0.102, false],
  ]);
});

test('an item’s scalar attrs become its search words; nested values and empties are left out, long values cut', () => {
  assert.equal(attrText({ error_type: 'TimeoutError', retries: 2, ok: false, nested: { a: 1 }, empty: '' }, { finish: 'x'.repeat(100) }), `error_type=TimeoutError retries=2 ok=false finish=${'x'.repeat(80)}`);
  assert.equal(attrText({ nested: { a: 1 } }, undefined), undefined);
});

test('a trace whose events have no time stamp is said to be unusable, not to be missing', async () => {
  const d = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', '0.pt'));
  const [a, b, c] = d.samples;
  for (const e of (sampleTrace(a)!.events as Record<string, unknown>[])) delete e.ts;
  (sampleTrace(b) as Record<string, unknown>).events = 'not a list';
  delete (c.fields as Record<string, unknown>).trace;
  const v = traceView(d.samples, d);
  assert.equal(v.rows.length, 9);
  assert.ok(v.notes.includes('1 of 12 samples carry no trace'), v.notes.join(' | '));
  assert.ok(v.notes.some((n) => n.startsWith('2 of 12 samples carry a trace with no event to place')), v.notes.join(' | '));
});

test('current layout: the recorded sglang_pd_* spans stay in the details, marked as slime’s stacked layout, and searchable', async () => {
  const d = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', '1.pt'));
  const v = traceView(d.samples, d);
  const row = v.rows.find((r) => r.sample_index === 16)!;
  const details = traceDetails(d.samples[row.row])!;
  // slime's own viewer has 12 recorded PD spans for this request: the two phases and their 10 leaves
  const recorded = details.items.filter((i) => i.name.startsWith('sglang_pd_') && i.kind === 'span');
  assert.equal(recorded.length, 12);
  for (const r of recorded) {
    assert.equal(r.note, STACKED_PD_NOTE);
    assert.match(r.span_id ?? '', /^[0-9a-f]{32}$/);
    assert.ok(r.end !== null && r.end >= r.start);
  }
  const prefill = recorded.find((r) => r.name === 'sglang_pd_prefill')!;
  assert.deepEqual(prefill.attrs, { start_attrs: {}, end_attrs: { phase: 'prefill', duration_s: 0.09103250503540039 } });
  // Each segment names the span it was built from; the row is found by that span's name.
  const fwd = row.items.find((i) => i.kind === 'pd' && i.role === 'P' && i.name === 'forward')!;
  const from = details.items[details.items[fwd.id].recorded!];
  assert.equal(from.name, 'sglang_pd_prefill_forward');
  assert.equal(from.attrs.end_attrs && (from.attrs.end_attrs as Record<string, unknown>).pd_prefill_forward_duration, details.items[fwd.id].attrs.pd_prefill_forward_duration);
  assert.ok(fwd.attr_text?.includes('sglang_pd_prefill_forward'));
  // They are drawn once, as the segments.
  assert.ok(!row.items.some((i) => i.kind === 'span' && i.name.startsWith('sglang_pd_')));
  // rows 0-2 of this dump are PD requests
  assert.deepEqual(v.rows.filter((r) => r.items.some((i) => i.attr_text?.includes('sglang_pd_prefill_forward'))).map((r) => r.row), [0, 1, 2]);
});

/** The legacy fixture's dump with sample 12's request span left open and four current-layout PD spans below it. */
async function craftedOpenRequest(dir: string): Promise<ReturnType<typeof readSlimeDump>> {
  const d = await readSlimeDump(fixturePath('slime-trace-legacy-pd', 'rollout_data', '1.pt'));
  const sample = d.samples.find((s) => s.key === 12)!;
  const trace = sampleTrace(sample)!;
  const events = trace.events as Record<string, unknown>[];
  const start = events.find((e) => e.type === 'span_start' && e.name === 'sglang_generate')!;
  const t = start.ts as number;
  const ev = (type: string, name: string, id: string, ts: number, extra: Record<string, unknown>) => ({ type, name, ts, trace_id: start.trace_id, sample_id: start.sample_id, group_id: start.group_id, attempt: start.attempt, span_id: id, ...extra });
  const pd = [
    ev('span_start', 'sglang_pd_prefill', 'pp01', t, { parent_span_id: start.span_id }),
    ev('span_start', 'sglang_pd_prefill_forward', 'pp02', t, { parent_span_id: 'pp01' }),
    ev('span_end', 'sglang_pd_prefill_forward', 'pp02', t + 0.05, { attrs: { pd_prefill_forward_duration: 0.05 } }),
    ev('span_end', 'sglang_pd_prefill', 'pp01', t + 0.05, { attrs: { phase: 'prefill', duration_s: 0.05 } }),
  ];
  // the request span never ends (a task cancelled after span.update(), as the fixtures make open spans)
  const at = events.indexOf(start) + 1;
  trace.events = [...events.slice(0, at), ...pd, ...events.slice(at)].filter((e) => !(e.type === 'span_end' && e.span_id === start.span_id)) as never;
  const file = join(dir, '1.pt');
  await saveTorch({ rollout_id: 1, samples: d.samples.map((s) => s.fields) } as never, file);
  return readSlimeDump(file);
}

test('recorded PD spans no segment was built from (under an open request span, or of an odd value type) are drawn as spans', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rlsight-trace-pd-'));
  try {
    const d = await craftedOpenRequest(dir);
    const v = traceView(d.samples, d);
    const row = v.rows.find((r) => r.sample_index === 12)!;
    assert.equal(row.items.find((i) => i.name === 'sglang_generate')!.kind, 'open');
    assert.deepEqual(row.lanes.filter(Boolean), []);
    const pd = row.items.filter((i) => i.name.startsWith('sglang_pd_'));
    assert.deepEqual(pd.map((i) => `${i.kind} ${i.name}`).sort(), ['span sglang_pd_prefill', 'span sglang_pd_prefill_forward']);
    const details = traceDetails(d.samples[row.row])!;
    const fwd = details.items[pd.find((i) => i.name === 'sglang_pd_prefill_forward')!.id];
    assert.equal(fwd.span_id, 'pp02');
    assert.equal(fwd.note, undefined);
    assert.deepEqual(fwd.attrs.end_attrs, { pd_prefill_forward_duration: 0.05 });
    // the child nests in its own lane below its parent, which sits below the open request span
    const lane = (n: string) => row.items.find((i) => i.name === n)!.lane;
    assert.ok(lane('sglang_pd_prefill_forward') > lane('sglang_pd_prefill') && lane('sglang_pd_prefill') > lane('sglang_generate'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // A pd_* value slime's perf rule does not count (a string): that one span is drawn, the rest stay segments.
  const cur = await readSlimeDump(fixturePath('slime-trace', 'rollout_data', '1.pt'));
  const s16 = cur.samples.find((s) => s.key === 16)!;
  const end = (sampleTrace(s16)!.events as Record<string, unknown>[]).find((e) => e.type === 'span_end' && e.name === 'sglang_pd_decode_transfer')!;
  (end.attrs as Record<string, unknown>).pd_decode_transfer_duration = '0.054';
  const row = traceView(cur.samples, cur).rows.find((r) => r.sample_index === 16)!;
  assert.deepEqual(row.items.filter((i) => i.kind === 'span' && i.name.startsWith('sglang_pd_')).map((i) => i.name).sort(), ['sglang_pd_decode', 'sglang_pd_decode_transfer']);
  assert.ok(!row.items.some((i) => i.kind === 'pd' && i.role === 'D' && i.name === 'transfer'));
  assert.ok(row.items.some((i) => i.kind === 'pd' && i.role === 'D' && i.name === 'forward'));
});
