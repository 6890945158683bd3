import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryIo } from '../../../test/support/memoryIo.ts';
import { TelemetryStore } from './store.ts';

const D = '/run/dashboard';
const H = 997200; // 1970-01-12 13:00 UTC
const gpu = (ts: number, node: string, g: number): string => `{"ts":${ts}.0,"node":"${node}","gpu":${g},"util":1,"mem_mb":2,"power_w":3}\n`;
const phase = (node: string, g: number, rank: number): string => `{"name":"actor_train","t0":${H}.0,"t1":${H + 5}.0,"node":"${node}","gpus":[${g}],"rank":${rank},"role":"train"}\n`;

describe('the lane index', () => {
  test('comes from lane_catalog.json while it is readable, else from the streams; a rewrite is a change', () => {
    const io = new MemoryIo();
    io.write(`${D}/gpu_util/19700112_13.jsonl`, gpu(H, '10.0.0.1', 0) + gpu(H, '10.0.0.1', 1));
    io.write(`${D}/phases/19700112_13.jsonl`, phase('10.0.0.1', 1, 4));
    io.write(`${D}/topology.jsonl`, JSON.stringify({ ts: H, engines: [{ addr: 'http://e', worker_type: 'regular', engine_rank: 0, gpus: [['10.0.0.2', 0]], gpu_uuids: [null] }] }) + '\n');
    const store = TelemetryStore.open(D, { io, parseWorkers: 0 });
    assert.equal(store.hasLaneCatalog(), false);
    const scanned = store.laneIndex();
    assert.deepEqual(scanned.map((l) => [l.node, l.gpu, l.ranks, l.roles, l.engine_addrs]), [
      ['10.0.0.1', 0, [], [], []],
      ['10.0.0.1', 1, [4], ['train'], []],
      ['10.0.0.2', 0, [], ['rollout'], ['http://e']],
    ]);
    const v = store.laneIndexVersion;
    // an equal catalog keeps the same entries object and version
    io.write(`${D}/lane_catalog.json`, JSON.stringify({ version: 1, lanes: { '10.0.0.1:0': { ranks: [], engine_addrs: [], roles: [] }, '10.0.0.1:1': { ranks: [4], engine_addrs: [], roles: ['train'] }, '10.0.0.2:0': { ranks: [], engine_addrs: ['http://e'], roles: ['rollout'] } } }));
    let r = store.follow();
    assert.equal(store.hasLaneCatalog(), true);
    assert.equal(r.lanesChanged, false);
    assert.equal(store.laneIndexVersion, v);
    // a catalog naming a new lane is reported once
    io.write(`${D}/lane_catalog.json`, JSON.stringify({ version: 1, lanes: { '10.0.0.3:0': { ranks: [9], engine_addrs: [], roles: ['train'] } } }));
    r = store.follow();
    assert.equal(r.lanesChanged, true);
    assert.deepEqual(r.newLanes.map((l) => `${l.node}:${l.gpu}`), ['10.0.0.3:0']);
    // an unreadable catalog falls back to the scan (with a warning naming the file)
    io.write(`${D}/lane_catalog.json`, '{"version": 1, "lanes": {"no-colon": {}}}');
    r = store.follow();
    assert.equal(store.hasLaneCatalog(), false);
    assert.deepEqual(store.laneIndex().map((l) => `${l.node}:${l.gpu}`), ['10.0.0.1:0', '10.0.0.1:1', '10.0.0.2:0']);
    assert.ok(r.warnings.some((w) => w.file === 'lane_catalog.json'));
  });

  test('the scan folds appended rows of a partition, not the file again', () => {
    const io = new MemoryIo();
    io.write(`${D}/gpu_util/19700112_13.jsonl`, gpu(H, '10.0.0.1', 0));
    const store = TelemetryStore.open(D, { io, parseWorkers: 0 });
    assert.equal(store.laneIndex().length, 1);
    io.append(`${D}/gpu_util/19700112_13.jsonl`, gpu(H + 1, '10.0.0.1', 1));
    const r = store.follow();
    assert.deepEqual(r.newLanes.map((l) => l.gpu), [1]);
    const reads = io.reads.filter((x) => x.path.endsWith('19700112_13.jsonl'));
    assert.deepEqual(reads.map((x) => x.offset > 0), [false, true]);
  });
});
