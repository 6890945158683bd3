import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyFixtureRun, diffJson, loadGoldens } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { BadArgument } from './limits.ts';
import { gpuSeries } from './gpuSeries.ts';

const run = copyFixtureRun();
after(() => run.dispose());
const store = TelemetryStore.open(join(run.dir, 'dashboard'));
const goldens = loadGoldens().filter((g) => g.request.startsWith('/api/timeline/gpu?') || g.request === '/api/timeline/gpu');

function query(request: string) {
  const p = new URL(request, 'http://x').searchParams;
  const num = (k: string) => (p.has(k) ? Number(p.get(k)) : undefined);
  return { t0: num('t0'), t1: num('t1'), maxPoints: num('max_points'), lanes: p.get('lanes') ?? undefined };
}

test('every gpu golden is reproduced', () => {
  const ok = goldens.filter((g) => g.status === 200);
  assert.ok(ok.length >= 12);
  for (const g of ok) {
    // as the wire writes it: typed columns become arrays
    const wire = JSON.parse(JSON.stringify(gpuSeries(store, query(g.request)), (_k, v) => (ArrayBuffer.isView(v) ? Array.from(v as Float64Array) : v)));
    const d = diffJson(wire, g.body);
    assert.equal(d, null, `${g.file} ${g.request}: ${d}`);
  }
});

test('bad gpu arguments are QueryErrors naming the parameter', () => {
  const bad = goldens.filter((g) => g.status === 400);
  assert.ok(bad.length >= 3);
  for (const g of bad) {
    assert.throws(
      () => gpuSeries(store, query(g.request)),
      (e: unknown) => e instanceof BadArgument && e.message === g.body.detail && typeof e.param === 'string',
      `${g.file} ${g.request}`,
    );
  }
});

test('lanes span blocks, out-of-order rows are sorted stably, spikes survive downsampling', async () => {
  const { GpuUtilBlock } = await import('../formats/columns/gpuUtilBlock.ts');
  const { LaneTable } = await import('../formats/columns/interning.ts');
  const lanes = new LaneTable();
  const a = lanes.id('10.0.0.2', 0);
  const b = lanes.id('10.0.0.10', 1); // interned second, listed second (cluster order)
  const h0 = new GpuUtilBlock('h0', 0, 3600);
  const h1 = new GpuUtilBlock('h1', 3600, 7200);
  for (let t = 0; t < 100; t++) h0.push(3500 + t, a, t === 42 ? 100 : 10, 1000 + t, 200);
  h0.push(3550.5, b, 7, 1, 2);
  h0.push(3549.5, b, 8, 3, 4); // out of order within the lane
  h1.push(3600, b, 9, 5, 6);
  h1.push(3601, a, 11, 1100, 200);
  const laneIndex = [
    { node: '10.0.0.2', gpu: 0, ranks: [3], engine_addrs: [], roles: ['train'], index: 0 },
    { node: '10.0.0.10', gpu: 1, ranks: [], engine_addrs: [], roles: [], index: 1 },
  ];
  const store = { lanes, laneIndex: () => laneIndex, gpuUtilBlocks: () => [h0, h1] };
  const all = gpuSeries(store, { maxPoints: 10 });
  assert.deepEqual(Object.keys(all.lanes), ['10.0.0.2:0', '10.0.0.10:1']);
  const plain = (s: (typeof all.lanes)[string]) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, Array.from(v as ArrayLike<number>)]));
  assert.deepEqual(plain(all.lanes['10.0.0.10:1']), { ts: [3549.5, 3550.5, 3600], util: [8, 7, 9], mem_mb: [3, 1, 5], power_w: [4, 2, 6] });
  const spiky = plain(all.lanes['10.0.0.2:0']);
  assert.ok(spiky.ts.length <= 10);
  assert.ok(spiky.util.includes(100) && spiky.ts.includes(3542) && spiky.mem_mb[spiky.ts.indexOf(3542)] === 1042);
  assert.equal(spiky.ts.at(-1), 3601);
  const windowed = gpuSeries(store, { t0: 3550, t1: 3600, lanes: 'rank:3', maxPoints: 1000 });
  assert.deepEqual(Object.keys(windowed.lanes), ['10.0.0.2:0']);
  assert.equal(windowed.lanes['10.0.0.2:0'].ts.length, 50);
});
