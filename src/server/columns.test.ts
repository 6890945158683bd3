// The columnar frame answers what JSON answers, value for value (a JSON null is NaN), for every series endpoint.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { copyFixtureRun, type RunCopy } from '../../test/support/fixtures.ts';
import { decodeFrame, encodeFrame } from '../formats/columnFrame.ts';
import { decodeColumns, engineSeriesOf, gpuLanes } from '../../web/columns.ts';
import { createApp } from './app.ts';
import { gpuFrame } from './columns.ts';
import { openRun, type OpenRun } from './run.ts';

/** JSON's view of a float column: NaN and ±Infinity are null. */
const asJson = (xs: ArrayLike<number>): (number | null)[] => Array.from(xs, (x) => (Number.isFinite(x) ? x : null));

describe('columnar answers', () => {
  let copy: RunCopy;
  let run: OpenRun;
  let app: ReturnType<typeof createApp>;
  before(async () => {
    copy = copyFixtureRun();
    run = await openRun(copy.dir);
    app = createApp({ run });
  });
  after(() => copy.dispose());

  const both = async (path: string): Promise<{ json: any; frame: ArrayBuffer; type: string | null }> => {
    const json = await (await app.request(path, { headers: { host: '127.0.0.1' } })).json();
    const res = await app.request(path, { headers: { host: '127.0.0.1', accept: 'application/vnd.rlsight.columns' } });
    assert.equal(res.status, 200);
    const viaQuery = await (await app.request(`${path}&format=columns`, { headers: { host: '127.0.0.1' } })).arrayBuffer();
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

  test('engine_series: every series with its labels', async () => {
    const meta = (await (await app.request('/api/meta', { headers: { host: '127.0.0.1' } })).json()) as { engine_metric_keys: string[] };
    assert.ok(meta.engine_metric_keys.length > 0);
    for (const metric of meta.engine_metric_keys) {
      const { json, frame } = await both(`/api/timeline/engine_series?metric=${encodeURIComponent(metric)}`);
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

  test('NaN, infinities and nulls survive the frame as NaN; the views share the received bytes', () => {
    const answer = { lanes: { 'n:0': { ts: [1, 2, 3], util: [null, NaN, 5], mem_mb: [Infinity, 0, -0], power_w: [1.5, null, 2 ** 60] }, 'n:1': { ts: [], util: [], mem_mb: [], power_w: [] } } } as never;
    const bytes = gpuFrame(answer);
    const frame = decodeColumns<{ lanes: string[] }>(bytes.buffer as ArrayBuffer);
    const lanes = gpuLanes(frame);
    const u = lanes['n:0'].util as unknown as Float64Array;
    assert.ok(Number.isNaN(u[0]) && Number.isNaN(u[1]) && u[2] === 5);
    assert.deepEqual(Array.from(lanes['n:0'].mem_mb as unknown as Float64Array), [Infinity, 0, -0]);
    assert.deepEqual(Array.from(lanes['n:0'].power_w as unknown as Float64Array).map((x) => (Number.isNaN(x) ? 'NaN' : x)), [1.5, 'NaN', 2 ** 60]);
    assert.equal((lanes['n:1'].ts as unknown as Float64Array).length, 0);
    assert.equal(u.buffer, bytes.buffer);
  });

  test('a damaged frame is refused with a message', () => {
    assert.throws(() => decodeFrame(new Uint8Array([1, 2, 3])), /not a columnar frame/);
    const good = encodeFrame({ a: 1 }, { x: new Float64Array([1, 2]) });
    assert.throws(() => decodeFrame(good.subarray(0, good.length - 8)), /runs past the end/);
    assert.deepEqual(Array.from(decodeFrame(good).columns.x), [1, 2]);
  });
});
