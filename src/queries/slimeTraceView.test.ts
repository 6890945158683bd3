import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixturePath } from '../../test/support/fixtures.ts';
import { readSlimeDump } from '../run/slime/dump.ts';
import { sampleTrace } from '../run/model.ts';
import { attrText, pdSegments, traceDetails, traceView } from './slimeTraceView.ts';

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
