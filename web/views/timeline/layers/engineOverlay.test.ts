import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Engine, Topology } from '../../../../src/wire/index.ts';
import { enginesForLane, unplacedEngines, windowsIn } from './engineOverlay.ts';

const engine = (addr: string, gpus: [string, number][]): Engine => ({ addr, worker_type: gpus.length ? 'regular' : 'external', engine_rank: gpus.length ? 0 : -1, gpus, gpu_uuids: gpus.map(() => null) });
const lanes = [
  { node: '10.0.0.1', gpu: 0 },
  { node: '10.0.0.1', gpu: 1 },
  { node: '10.0.0.2', gpu: 0 },
];

test('a run with no topology places no engine series, and says why', () => {
  // serve --prometheus: the engines are Prometheus instances, and the run recorded no topology
  const addrs = ['http://127.0.0.1:7141', 'http://127.0.0.1:7142'];
  assert.deepEqual(unplacedEngines(null, lanes, addrs, 0, 100), addrs.map((addr) => ({ addr, why: 'no topology' })));
  // a topology whose snapshots all lie outside the window says nothing about it either
  const old: Topology = { lanes: [], windows: [{ t0: 0, t1: 10, engines: [engine('http://127.0.0.1:7141', [['10.0.0.1', 0]])] }] };
  assert.deepEqual(unplacedEngines(old, lanes, addrs, 20, 100).map((u) => u.why), ['no topology', 'no topology']);
});

test('engines are placed as the overlay draws them, and the others get their reason', () => {
  const topo: Topology = {
    lanes: [],
    windows: [
      {
        t0: 0,
        t1: 50,
        engines: [
          engine('http://10.0.0.1:15000', [['10.0.0.1', 0]]),
          // a second engine on the same GPU: the lane shows the first
          engine('http://10.0.0.1:15004', [['10.0.0.1', 0]]),
          // external engines carry no GPU: placed by host, on a lane's node or not
          engine('http://10.0.0.2:30000', []),
          engine('http://127.0.0.1:7141', []),
          engine('http://10.0.0.9:15000', [['10.0.0.9', 0]]),
        ],
      },
      { t0: 50, t1: null, engines: [engine('http://10.0.0.1:15008', [['10.0.0.1', 1]])] },
    ],
  };
  const addrs = ['http://10.0.0.1:15000', 'http://10.0.0.1:15004', 'http://10.0.0.2:30000', 'http://127.0.0.1:7141', 'http://10.0.0.9:15000', 'http://10.0.0.1:15008', 'http://10.0.0.3:15000'];
  const unplaced = unplacedEngines(topo, lanes, addrs, 0, 100);
  assert.deepEqual(unplaced, [
    { addr: 'http://10.0.0.1:15004', why: 'lane taken' },
    { addr: 'http://127.0.0.1:7141', why: 'no lane' },
    { addr: 'http://10.0.0.9:15000', why: 'no lane' },
    { addr: 'http://10.0.0.3:15000', why: 'not in topology' },
  ]);
  // exactly the engines some lane draws are left out
  const drawn = new Set(lanes.flatMap((l) => enginesForLane(topo, l.node, l.gpu, 0, 100).map((s) => s.addr)));
  assert.deepEqual(
    addrs.filter((a) => !drawn.has(a)),
    unplaced.map((u) => u.addr),
  );
  // only the window on screen counts: after t=50 only 10.0.0.1:15008 is placed
  assert.deepEqual(
    unplacedEngines(topo, lanes, ['http://10.0.0.1:15000', 'http://10.0.0.1:15008'], 60, 100),
    [{ addr: 'http://10.0.0.1:15000', why: 'not in topology' }],
  );
});

test('the windows a view overlaps, which is all the unplaced engines depend on', () => {
  const topo: Topology = { lanes: [], windows: [{ t0: 0, t1: 10, engines: [] }, { t0: 10, t1: 30, engines: [] }, { t0: 30, t1: null, engines: [] }] };
  assert.deepEqual(windowsIn(topo, 12, 20), [1]);
  // a window's ends count as inside it, and an open window reaches every later moment
  assert.deepEqual(windowsIn(topo, 10, 10), [0, 1]);
  assert.deepEqual(windowsIn(topo, 1e9, 2e9), [2]);
  assert.deepEqual(windowsIn(null, 0, 10), []);
});

test('for any topology, an engine is unplaced exactly when no lane draws it', () => {
  const nodes = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];
  const addr = fc.tuple(fc.constantFrom(...nodes), fc.integer({ min: 0, max: 2 })).map(([n, p]) => `http://${n}:${30000 + p}`);
  const gpu = fc.tuple(fc.constantFrom(...nodes), fc.integer({ min: 0, max: 2 }));
  const eng = fc.tuple(addr, fc.array(gpu, { maxLength: 2 })).map(([a, g]) => engine(a, g));
  const win = fc.tuple(fc.integer({ min: 0, max: 90 }), fc.option(fc.integer({ min: 0, max: 30 })), fc.array(eng, { maxLength: 5 })).map(([t0, d, engines]) => ({ t0, t1: d === null ? null : t0 + d, engines }));
  const lane = fc.record({ node: fc.constantFrom(...nodes), gpu: fc.integer({ min: 0, max: 2 }) });
  fc.assert(
    fc.property(fc.array(win, { maxLength: 4 }), fc.array(lane, { maxLength: 4 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 40 }), (windows, ls, t0, d) => {
      const topo: Topology = { lanes: [], windows };
      const addrs = [...new Set(windows.flatMap((w) => w.engines.map((e) => e.addr)).concat('http://10.0.0.9:1'))];
      const drawn = new Set(ls.flatMap((l) => enginesForLane(topo, l.node, l.gpu, t0, t0 + d).map((s) => s.addr)));
      assert.deepEqual(
        unplacedEngines(topo, ls, addrs, t0, t0 + d).map((u) => u.addr),
        addrs.filter((a) => !drawn.has(a)),
      );
    }),
  );
});
