import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { copyFixtureRun, diffJson, loadGoldens } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { BadArgument } from './limits.ts';
import { encodeHeatmap, heatmap } from './heatmap.ts';
import { decodeHeatmapFrame } from './heatmapFrame.ts';

const run = copyFixtureRun();
after(() => run.dispose());
const store = TelemetryStore.open(join(run.dir, 'dashboard'));
const goldens = loadGoldens().filter((g) => g.request.startsWith('/api/timeline/heatmap'));

function query(request: string) {
  const p = new URL(request, 'http://x').searchParams;
  const num = (k: string) => (p.has(k) ? Number(p.get(k)) : undefined);
  return { metric: p.get('metric') ?? undefined, t0: num('t0'), t1: num('t1'), xBuckets: num('x_buckets'), lanes: p.get('lanes') ?? undefined };
}

test('every heatmap golden is reproduced byte for byte (header JSON and matrix)', () => {
  const ok = goldens.filter((g) => g.status === 200);
  assert.ok(ok.length >= 18);
  for (const g of ok) {
    const expected = Buffer.from(g.body.base64, 'base64');
    const frame = encodeHeatmap(heatmap(store, query(g.request)));
    const got = decodeHeatmapFrame(frame);
    const want = decodeHeatmapFrame(expected);
    assert.equal(diffJson(got.header, want.header), null, `${g.file} header: ${diffJson(got.header, want.header)}`);
    assert.deepEqual([...got.matrix], [...want.matrix], `${g.file} matrix`);
    assert.equal(Buffer.compare(Buffer.from(frame), expected), 0, `${g.file} bytes`);
  }
});

test('bad heatmap arguments are 400 QueryErrors naming the parameter', () => {
  const bad = goldens.filter((g) => g.status === 400);
  assert.ok(bad.length >= 6);
  for (const g of bad) {
    assert.throws(
      () => heatmap(store, query(g.request)),
      (e: unknown) => e instanceof BadArgument && e.message === g.body.detail && typeof e.param === 'string',
      g.file,
    );
  }
});

test('a lone bound past the data is a 400 on that bound (the reference answers 500)', () => {
  const quirks = goldens.filter((g) => g.status === 500);
  assert.equal(quirks.length, 2);
  const params = quirks.map((g) => {
    try {
      heatmap(store, query(g.request));
    } catch (e) {
      assert.ok(e instanceof BadArgument && /empty heatmap window/.test(e.message), String(e));
      return e.param;
    }
    assert.fail(`${g.file} did not throw`);
  });
  assert.deepEqual(params, ['t0', 't1']);
});

test('a run without data gives the empty heatmap', () => {
  const empty = TelemetryStore.open(join(run.dir, 'no-such-dashboard'));
  const h = heatmap(empty, { metric: 'phase', xBuckets: 10 });
  assert.deepEqual(h.header, { rows: [], x_buckets: 10, t0: 0, t1: 0, metric: 'phase', scale: null, palette: null });
  assert.equal(h.values.length, 0);
  assert.equal(Buffer.from(encodeHeatmap(h).subarray(4)).toString(), '{"rows": [], "x_buckets": 10, "t0": 0.0, "t1": 0.0, "metric": "phase", "scale": null, "palette": null}');
});

test('a power the GPU did not report (the sampler writes -1) is no sample: nothing is painted at full scale', () => {
  const copy = copyFixtureRun();
  try {
    const dir = join(copy.dir, 'dashboard', 'gpu_util');
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) writeFileSync(join(dir, f), readFileSync(join(dir, f), 'utf8').replace(/"power_w":[0-9.]+/g, '"power_w":-1'));
    const unknown = TelemetryStore.open(join(copy.dir, 'dashboard'), { parseWorkers: 0 });
    try {
      const power = decodeHeatmapFrame(encodeHeatmap(heatmap(unknown, { metric: 'power_w' })));
      assert.deepEqual(new Set(power.matrix), new Set([0]));
      // the same rows' utilisation is painted as ever
      assert.ok(new Set(decodeHeatmapFrame(encodeHeatmap(heatmap(unknown, { metric: 'util' }))).matrix).size > 1);
    } finally {
      unknown.close();
    }
  } finally {
    copy.dispose();
  }
});
