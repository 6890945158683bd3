import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyFixtureRun, diffJson, loadGoldens } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { BadArgument } from './limits.ts';
import { outliers } from './outliers.ts';

const run = copyFixtureRun();
after(() => run.dispose());
const store = TelemetryStore.open(join(run.dir, 'dashboard'));
const goldens = loadGoldens().filter((g) => g.request.startsWith('/api/timeline/outliers'));

function query(request: string) {
  const p = new URL(request, 'http://x').searchParams;
  const num = (k: string) => (p.has(k) ? Number(p.get(k)) : undefined);
  return { criterion: p.get('criterion') ?? '', t0: num('t0'), t1: num('t1'), topK: num('top_k') };
}

test('every outliers golden is reproduced (scores within 1e-6)', () => {
  const ok = goldens.filter((g) => g.status === 200);
  assert.ok(ok.length >= 14);
  for (const g of ok) {
    const d = diffJson(outliers(store, query(g.request)), g.body);
    assert.equal(d, null, `${g.file} ${g.request}: ${d}`);
  }
});

test('bad outlier arguments are 400 QueryErrors naming the parameter', () => {
  const bad = goldens.filter((g) => g.status === 400);
  assert.ok(bad.length >= 4);
  for (const g of bad) {
    assert.throws(
      () => outliers(store, query(g.request)),
      (e: unknown) => e instanceof BadArgument && e.message === g.body.detail && typeof e.param === 'string',
      g.file,
    );
  }
});

test('ties: lowest_util ascending by (node, gpu), slowest_phase descending', () => {
  const low = outliers(store, { criterion: 'lowest_util', topK: 256 }).outliers;
  for (let i = 1; i < low.length; i++) assert.ok(low[i - 1].score <= low[i].score);
  const slow = outliers(store, { criterion: 'slowest_phase:rollout', topK: 256 }).outliers;
  for (let i = 1; i < slow.length; i++) {
    const a = slow[i - 1];
    const b = slow[i];
    assert.ok(a.score > b.score || (a.score === b.score && (a.node > b.node || (a.node === b.node && a.gpu > b.gpu))));
  }
});
