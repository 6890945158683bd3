import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyFixtureRun, diffJson, loadGoldens } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { BadArgument } from './limits.ts';
import { fleet } from './fleet.ts';

const run = copyFixtureRun();
after(() => run.dispose());
const store = TelemetryStore.open(join(run.dir, 'dashboard'));
const goldens = loadGoldens().filter((g) => g.request.startsWith('/api/timeline/fleet'));

function query(request: string) {
  const p = new URL(request, 'http://x').searchParams;
  const num = (k: string) => (p.has(k) ? Number(p.get(k)) : undefined);
  return { t0: num('t0'), t1: num('t1'), xBuckets: num('x_buckets') };
}

test('every fleet golden is reproduced, cold and from the answer cache', () => {
  const ok = goldens.filter((g) => g.status === 200);
  assert.ok(ok.length >= 5);
  for (let pass = 0; pass < 2; pass++) {
    for (const g of ok) {
      const got = fleet(store, query(g.request));
      const d = diffJson(got, g.body);
      assert.equal(d, null, `${g.file} ${g.request}: ${d}`);
      got.band.p10[0] = -1; // callers may mutate their copy without touching the cache
    }
  }
});

test('bad fleet arguments are 400 QueryErrors; a lone bound past the data is a 400 on it (the reference answers 500)', () => {
  const bad = goldens.filter((g) => g.status === 400);
  assert.ok(bad.length >= 4);
  for (const g of bad) {
    assert.throws(
      () => fleet(store, query(g.request)),
      (e: unknown) => e instanceof BadArgument && e.message === g.body.detail && typeof e.param === 'string',
      g.file,
    );
  }
  const quirk = goldens.filter((g) => g.status === 500);
  assert.equal(quirk.length, 1);
  assert.throws(() => fleet(store, query(quirk[0].request)), (e: unknown) => e instanceof BadArgument && e.param === 't0');
});

test('a run without data: empty palette and composition, null band', () => {
  const empty = TelemetryStore.open(join(run.dir, 'no-such-dashboard'));
  assert.deepEqual(fleet(empty, { xBuckets: 3 }), {
    t0: 0,
    t1: 0,
    x_buckets: 3,
    lanes: 0,
    palette: [],
    composition: {},
    band: { p10: [null, null, null], p50: [null, null, null], p90: [null, null, null], min: [null, null, null] },
  });
});

test('follow(): appended gpu rows change the cached overview', async () => {
  const { appendFileSync } = await import('node:fs');
  const copy = copyFixtureRun();
  try {
    const dash = join(copy.dir, 'dashboard');
    const live = TelemetryStore.open(dash);
    const q = { t0: 1000300, t1: 1000340, xBuckets: 4 };
    const before = fleet(live, q);
    assert.deepEqual(before.band.p90, [95, 30, 30, null]);
    appendFileSync(join(dash, 'gpu_util', '19700112_13.jsonl'), JSON.stringify({ ts: 1000335.0, node: '10.0.0.1', gpu: 1, util: 77, mem_mb: 1, power_w: 2 }) + '\n');
    live.follow();
    const after = fleet(live, q);
    assert.deepEqual(after.band.p90, [95, 30, 30, 77]);
    assert.deepEqual(after.band.min, [95, 30, 30, 77]);
  } finally {
    copy.dispose();
  }
});
