// The columnar frame answers what JSON answers, value for value (a JSON null is NaN), for every series endpoint.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { servedFixture } from '../../test/support/servedFixture.ts';
import { decodeFrame, encodeFrame, joinPieces } from '../formats/columnFrame.ts';
import { decodeColumns, engineSeriesOf, gpuLanes, phaseLanes } from '../../web/columns.ts';
import fc from 'fast-check';
import { engineSeriesFrame, gpuFrame, narrowestType, phasesFrame } from './columns.ts';

/** JSON's view of a float column: NaN and ±Infinity are null. */
const asJson = (xs: ArrayLike<number>): (number | null)[] => Array.from(xs, (x) => (Number.isFinite(x) ? x : null));

describe('columnar answers', () => {
  const served = servedFixture();

  const both = async (path: string): Promise<{ json: any; frame: ArrayBuffer; type: string | null }> => {
    const json = await (await served.get(path)).json();
    const res = await served.get(path, { accept: 'application/vnd.rlsight.columns' });
    assert.equal(res.status, 200);
    const viaQuery = await (await served.get(`${path}&format=columns`)).arrayBuffer();
    const frame = await res.arrayBuffer();
    assert.deepEqual(new Uint8Array(viaQuery), new Uint8Array(frame));
    return { json, frame, type: res.headers.get('content-type') };
  };

  test('gpu: every lane and every sample', async () => {
    const { json, frame, type } = await both('/api/timeline/gpu?lanes=g:0-7');
    assert.equal(type, 'application/vnd.rlsight.columns');
    const lanes = gpuLanes(decodeColumns(frame));
    assert.deepEqual(Object.keys(lanes), Object.keys(json.lanes));
    assert.ok(Object.keys(lanes).length > 0);
    for (const [k, s] of Object.entries(lanes)) {
      for (const f of ['ts', 'util', 'mem_mb', 'power_w'] as const) assert.deepEqual(asJson(s[f] as unknown as Float64Array), json.lanes[k][f], `${k} ${f}`);
    }
  });

  test('the frame is answered when its media type is accepted, JSON when it is refused with q=0', async () => {
    const type = async (accept: string) => (await served.get('/api/timeline/gpu?lanes=g:0', { accept })).headers.get('content-type') ?? '';
    assert.match(await type('application/json, application/vnd.rlsight.columns;q=0.5'), /vnd\.rlsight\.columns/);
    assert.match(await type('Application/Vnd.Rlsight.Columns'), /vnd\.rlsight\.columns/);
    assert.match(await type('application/vnd.rlsight.columns;q=0, application/json'), /application\/json/);
    assert.match(await type('application/json'), /application\/json/);
    // asked for by name: columns, json, or a 400 naming format
    assert.match((await served.get('/api/timeline/gpu?lanes=g:0&format=json', { accept: 'application/vnd.rlsight.columns' })).headers.get('content-type') ?? '', /application\/json/);
    const xml = await served.get('/api/timeline/gpu?lanes=g:0&format=xml');
    assert.equal(xml.status, 400);
    assert.match(((await xml.json()) as { detail: string }).detail, /^format: expected columns or json, got "xml"$/);
  });

  test('engine_series: every series with its labels, as the timeline and the Metrics view ask', async () => {
    const meta = (await (await served.get('/api/meta')).json()) as { engine_metric_keys: string[] };
    assert.ok(meta.engine_metric_keys.length > 0);
    const asks = meta.engine_metric_keys.flatMap((m) => [`metric=${encodeURIComponent(m)}`, `metric=${encodeURIComponent(m)}&max_points=1000&per_dp_rank=true`, `metric=${encodeURIComponent(m)}&max_points=7`]);
    for (const metric of asks) {
      const { json, frame } = await both(`/api/timeline/engine_series?${metric}`);
      const series = engineSeriesOf(decodeColumns(frame));
      assert.equal(series.length, json.series.length);
      series.forEach((s, i) => {
        assert.equal(s.addr, json.series[i].addr);
        assert.deepEqual(s.labels, json.series[i].labels);
        assert.deepEqual(asJson(s.ts as unknown as Float64Array), json.series[i].ts);
        assert.deepEqual(asJson(s.value as unknown as Float64Array), json.series[i].value, metric);
      });
    }
  });

  test('phases: one row per phase, strings by id', async () => {
    const { json, frame } = await both('/api/timeline/phases?lanes=g:0-7');
    const { header, columns } = decodeFrame<{ strings: string[] }>(new Uint8Array(frame));
    const rows = Array.from(columns.name, (_, i) => ({
      name: header.strings[columns.name[i]],
      t0: columns.t0[i],
      t1: columns.t1[i],
      node: header.strings[columns.node[i]],
      gpu: columns.gpu[i],
      rank: columns.rank[i],
      role: header.strings[columns.role[i]],
    }));
    assert.ok(rows.length > 0);
    assert.deepEqual(rows, json.phases);
  });

  test('phases by lane, as the app reads them: each lane a slice of the frame, rows in answer order', async () => {
    for (const lanes of ['g:0-7', 'all', 'g:3']) {
      const { json, frame } = await both(`/api/timeline/phases?lanes=${lanes}`);
      const { byLane, names } = phaseLanes(decodeColumns(frame));
      const rows = [...byLane].flatMap(([key, p]) =>
        Array.from({ length: p.length }, (_, i) => ({ name: p.strings[p.name[i]!], t0: p.t0[i], t1: p.t1[i], key, rank: p.rank[i], role: p.strings[p.role[i]!] })),
      );
      assert.ok(rows.length > 0, lanes);
      assert.deepEqual(rows, json.phases.map((q: any) => ({ name: q.name, t0: q.t0, t1: q.t1, key: `${q.node}:${q.gpu}`, rank: q.rank, role: q.role })), lanes);
      assert.deepEqual(names, [...new Set(json.phases.map((q: any) => q.name))], lanes);
      const t0 = [...byLane.values()][0]!.t0;
      assert.equal(t0.buffer, frame, 'a lane\'s columns are views over the received bytes');
    }
  });

  test('phases: non-finite bounds, odd strings, empty answers survive the frame', () => {
    const phases = [
      { name: 'rollout', t0: 1.5, t1: Infinity, node: 'nöde-α', gpu: 0, rank: -1, role: 'rollout_manager' },
      { name: 'train "x"\n', t0: -Infinity, t1: null, node: 'nöde-α', gpu: 0, rank: 2 ** 31 - 1, role: 'train' },
      { name: 'rollout', t0: NaN, t1: -0, node: 'n2', gpu: 7, rank: 0, role: '' },
    ] as never[];
    const frame = decodeColumns<{ strings: string[] }>(joinPieces(phasesFrame({ phases })).buffer as ArrayBuffer);
    const { byLane, names } = phaseLanes(frame);
    assert.deepEqual([...byLane.keys()], ['nöde-α:0', 'n2:7']);
    assert.deepEqual(names, ['rollout', 'train "x"\n']);
    const a = byLane.get('nöde-α:0')!;
    assert.deepEqual([Array.from(a.t0), Array.from(a.t1)], [[1.5, -Infinity], [Infinity, NaN]]);
    assert.deepEqual(Array.from(a.rank), [-1, 2 ** 31 - 1]);
    assert.deepEqual([a.strings[a.role[0]!], a.strings[a.role[1]!]], ['rollout_manager', 'train']);
    const b = byLane.get('n2:7')!;
    assert.ok(Number.isNaN(b.t0[0]) && Object.is(b.t1[0], -0) && b.strings[b.role[0]!] === '');
    assert.equal(phaseLanes(decodeColumns(joinPieces(phasesFrame({ phases: [] })).buffer as ArrayBuffer)).byLane.size, 0);
    assert.equal(a.unfinished, null);
    // a phase never closed keeps its mark, as the row of its own lane
    const marked = phases.map((p: any, i) => (i === 2 ? { ...p, unfinished: true } : p)) as never[];
    const lanes = phaseLanes(decodeColumns(joinPieces(phasesFrame({ phases: marked })).buffer as ArrayBuffer)).byLane;
    assert.deepEqual([lanes.get('nöde-α:0')!.unfinished, [...lanes.get('n2:7')!.unfinished!]], [null, [0]]);
    // and one still open at the data edge keeps its own
    const open = phases.map((p: any, i) => (i === 1 ? { ...p, open: true } : p)) as never[];
    const openLanes = phaseLanes(decodeColumns(joinPieces(phasesFrame({ phases: open })).buffer as ArrayBuffer)).byLane;
    assert.deepEqual([[...openLanes.get('nöde-α:0')!.open!], openLanes.get('n2:7')!.open, openLanes.get('n2:7')!.unfinished], [[1], null, null]);
    // The server's own decoder reads the same frame.
    assert.deepEqual(Array.from(decodeFrame(joinPieces(phasesFrame({ phases }))).columns.gpu), [0, 0, 7]);
  });

  test('engine_series: NaN, null, infinities, empty series and unicode labels survive the frame', () => {
    const series = [
      { addr: 'http://10.0.0.1:15000', labels: { model: 'qwen-α', dp_rank: '0' }, ts: [1, 2, 3, 4], value: [null, NaN, Infinity, -Infinity] },
      { addr: 'http://10.0.0.2:15000', labels: {}, ts: [], value: [] },
      { addr: 'h', labels: { q: '"\n' }, ts: [2 ** 53, -0], value: [5e-324, 1.7976931348623157e308] },
    ] as never[];
    const bytes = joinPieces(engineSeriesFrame({ series }));
    const got = engineSeriesOf(decodeColumns(bytes.buffer as ArrayBuffer));
    assert.deepEqual(got.map((s) => [s.addr, s.labels]), (series as any[]).map((s) => [s.addr, s.labels]));
    const show = (xs: Float64Array) => Array.from(xs, (x) => (Number.isNaN(x) ? 'NaN' : x));
    assert.deepEqual(show(got[0]!.value), ['NaN', 'NaN', Infinity, -Infinity]);
    assert.deepEqual([got[1]!.ts.length, got[1]!.value.length], [0, 0]);
    assert.deepEqual([show(got[2]!.ts), show(got[2]!.value)], [[2 ** 53, -0], [5e-324, 1.7976931348623157e308]]);
    assert.ok(Object.is(got[2]!.ts[1], -0));
    assert.equal(got[0]!.value.buffer, bytes.buffer, 'views over the received bytes');
  });

  test('NaN, infinities and nulls survive the frame as NaN; the views share the received bytes', () => {
    const answer = { lanes: { 'n:0': { ts: [1, 2, 3], util: [null, NaN, 5], mem_mb: [Infinity, 0, -0], power_w: [1.5, null, 2 ** 60] }, 'n:1': { ts: [], util: [], mem_mb: [], power_w: [] } } } as never;
    const bytes = joinPieces(gpuFrame(answer));
    const frame = decodeColumns<{ lanes: string[] }>(bytes.buffer as ArrayBuffer);
    const lanes = gpuLanes(frame);
    const u = lanes['n:0'].util as unknown as Float64Array;
    assert.ok(Number.isNaN(u[0]) && Number.isNaN(u[1]) && u[2] === 5);
    assert.deepEqual(Array.from(lanes['n:0'].mem_mb as unknown as Float64Array), [Infinity, 0, -0]);
    assert.deepEqual(Array.from(lanes['n:0'].power_w as unknown as Float64Array).map((x) => (Number.isNaN(x) ? 'NaN' : x)), [1.5, 'NaN', 2 ** 60]);
    assert.equal((lanes['n:1'].ts as unknown as Float64Array).length, 0);
    assert.equal(u.buffer, bytes.buffer);
  });

  test('gpu: util, mem_mb and power_w take the narrowest type that holds every value exactly', () => {
    const lane = (util: (number | null)[], mem: (number | null)[], power: (number | null)[]) => ({ ts: util.map((_, i) => 1_700_000_000.25 + i), util, mem_mb: mem, power_w: power });
    const types = (answer: unknown) => {
      const { columns } = decodeFrame(joinPieces(gpuFrame(answer as never)));
      return ['ts', 'util', 'mem_mb', 'power_w'].map((k) => columns[k]!.constructor.name);
    };
    // integers: u8 for util, i32 for MiB past 65,535, u16 for watts; the timestamps stay f64
    assert.deepEqual(types({ lanes: { 'n:0': lane([0, 100], [0, 81_559], [88, 700]), 'n:1': lane([5], [7], [9]) } }), ['Float64Array', 'Uint8Array', 'Int32Array', 'Uint16Array']);
    // a half watt fits f32 exactly, a tenth does not; a gap (null) or -0 needs a float column
    assert.deepEqual(types({ lanes: { 'n:0': lane([1, null], [-0, 3], [312.5, 312.1]) } }), ['Float64Array', 'Float32Array', 'Float32Array', 'Float64Array']);
    assert.deepEqual(types({ lanes: { 'n:0': lane([-1, 2 ** 31], [2 ** 32 - 1, 0], [2 ** 32, 1]) } }), ['Float64Array', 'Float32Array', 'Uint32Array', 'Float32Array']);
    assert.equal(narrowestType([[2 ** 32 + 1]]), Float64Array);
    assert.equal(narrowestType([]), Uint8Array);
  });

  test('property: any gpu answer round-trips the frame exactly (null as NaN, -0 kept)', () => {
    const value = fc.oneof(
      fc.integer({ min: 0, max: 255 }),
      fc.integer({ min: -(2 ** 31), max: 2 ** 32 }),
      fc.double(),
      fc.constant(null),
      fc.constantFrom(0.5, -0, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1),
    );
    const lanes = fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.array(fc.tuple(fc.double({ noNaN: true }), value, value, value), { maxLength: 20 }), { maxKeys: 4 });
    const same = (a: number | null, b: number) => (a === null ? Number.isNaN(b) : Object.is(a, b));
    fc.assert(
      fc.property(lanes, (spec) => {
        const answer = { lanes: Object.fromEntries(Object.entries(spec).map(([k, rows]) => [k, { ts: rows.map((r) => r[0]), util: rows.map((r) => r[1]), mem_mb: rows.map((r) => r[2]), power_w: rows.map((r) => r[3]) }])) };
        const got = gpuLanes(decodeColumns(joinPieces(gpuFrame(answer as never)).slice().buffer as ArrayBuffer));
        assert.deepEqual(Object.keys(got), Object.keys(answer.lanes));
        for (const [k, s] of Object.entries(answer.lanes)) {
          for (const f of ['ts', 'util', 'mem_mb', 'power_w'] as const) {
            const col = got[k]![f] as unknown as ArrayLike<number>;
            assert.equal(col.length, s[f].length);
            s[f].forEach((v, i) => assert.ok(same(v, col[i]!), `${k} ${f}[${i}]: ${v} became ${col[i]}`));
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  test('a damaged frame is refused with a message', () => {
    assert.throws(() => decodeFrame(new Uint8Array([1, 2, 3])), /not a columnar frame/);
    const good = encodeFrame({ a: 1 }, { x: new Float64Array([1, 2]) });
    assert.throws(() => decodeFrame(good.subarray(0, good.length - 8)), /runs past the end/);
    assert.deepEqual(Array.from(decodeFrame(good).columns.x), [1, 2]);
  });
});
