import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryIo } from '../../../test/support/memoryIo.ts';
import { FlatStreams } from './flatStreams.ts';

const D = '/run/dashboard';
const metrics = (ts: number, step: number, m: Record<string, unknown>): string => JSON.stringify({ ts, step_key: 'rollout/step', step, metrics: m }) + '\n';

function open(io: MemoryIo): { flat: FlatStreams; warnings: string[] } {
  const warnings: string[] = [];
  return { flat: new FlatStreams(D, io, (f, l, m) => warnings.push(`${f}:${l}: ${m}`)), warnings };
}

describe('flat streams', () => {
  test('read whole, then tailed: only complete lines, new keys reported once', () => {
    const io = new MemoryIo();
    io.write(`${D}/metrics.jsonl`, metrics(10, 0, { 'a/x': 1, 'rollout/step': 0 }) + '{"ts":11,"step_key"');
    const { flat } = open(io);
    let r = flat.follow();
    assert.deepEqual(r.added, { metrics: 1 });
    assert.deepEqual(r.newMetricKeys, ['a/x', 'rollout/step']);
    assert.deepEqual(r.newStepKeys, ['rollout/step']);
    // the writer finishes the torn line and adds one more
    io.append(`${D}/metrics.jsonl`, ':null,"step":null,"metrics":{"b":2}}\n' + metrics(12, 1, { 'a/x': 3 }));
    r = flat.follow();
    assert.deepEqual(r.added, { metrics: 2 });
    assert.deepEqual(r.newMetricKeys, ['b']);
    assert.deepEqual(flat.metricsRecords().map((m) => m.ts), [10, 11, 12]);
    assert.deepEqual(flat.stampRange(), [10, 12]);
    assert.deepEqual(flat.follow().added, {});
    // each follow read only the new bytes
    const offsets = io.reads.filter((x) => x.path.endsWith('metrics.jsonl')).map((x) => x.offset);
    assert.equal(offsets[0], 0);
    assert.ok(offsets[1] > 0 && offsets[2] > offsets[1]);
  });

  test('corrupt lines are skipped with file and line; a bad meta.json is a warning, a rewritten one is read again', () => {
    const io = new MemoryIo();
    io.write(`${D}/meta.json`, '{"run_name": "r", "start_ts": 5.0, "args": {}, "schema_version": 1}');
    io.write(`${D}/topology.jsonl`, '{"ts":1.0,"engines":[]}\nnot json\n{"ts":2.0}\n');
    io.write(`${D}/data_buffer.jsonl`, '{"ts":3.0,"length":7}\n');
    const { flat, warnings } = open(io);
    assert.equal(flat.follow().metaChanged, true);
    assert.equal(flat.meta()?.run_name, 'r');
    assert.equal(flat.topologySnapshots().length, 1);
    assert.equal(flat.latestDataBufferLength(), 7);
    assert.equal(warnings.length, 2);
    assert.match(warnings[0], /^topology\.jsonl:2: /);
    assert.match(warnings[1], /^topology\.jsonl:3: topology record must have exactly the keys ts, engines/);
    assert.equal(flat.follow().metaChanged, false);
    io.write(`${D}/meta.json`, '{"start_ts": 5.0}');
    assert.equal(flat.follow().metaChanged, true);
    assert.equal(flat.meta(), null);
    assert.match(warnings[2], /^meta\.json:1: unreadable run header/);
  });

  test('topology windows are sorted by ts, the last one open-ended', () => {
    const io = new MemoryIo();
    io.write(`${D}/topology.jsonl`, '{"ts":20.0,"engines":[]}\n{"ts":10.0,"engines":[]}\n');
    const { flat } = open(io);
    flat.follow();
    assert.deepEqual(flat.topologyWindows().map((w) => [w.t0, w.t1]), [[10, 20], [20, null]]);
  });
});
