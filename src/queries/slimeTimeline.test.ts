import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fixturePath } from '../../test/support/fixtures.ts';
import { readSlimeDump } from '../run/slime/dump.ts';
import { round6, timelineCache, timelineCacheJson } from './slimeTimeline.ts';

const DUMPS = [
  ['slime-trace', '0'],
  ['slime-trace', '1'],
  ['slime-trace', 'eval_0'],
  ['slime-trace-legacy-pd', '0'],
  ['slime-trace-legacy-pd', '1'],
] as const;

for (const [fixture, stem] of DUMPS) {
  test(`${fixture} ${stem}: the cache equals slime's byte for byte (NaN written as null)`, async () => {
    const golden = readFileSync(fixturePath(fixture, 'golden', `${stem}.trace_timeline_cache.json`), 'utf8');
    const head = /^\{"cache_version":1,"pt_path":("[^"]*"),"generated_at":([0-9.e+]+),/.exec(golden);
    assert.ok(head, 'golden head');
    const dump = await readSlimeDump(fixturePath(fixture, 'rollout_data', `${stem}.pt`));
    const ours = timelineCacheJson(timelineCache(dump.samples, JSON.parse(head[1]), Number(head[2])));
    const want = golden.replace(/\bNaN\b|-?\bInfinity\b/g, 'null');
    assert.equal(ours, want);
    // Strict JSON, unlike slime's own file where it holds NaN.
    JSON.parse(ours);
  });
}

test('[P]/[D] virtual lanes: present for the legacy flat layout, absent (as in slime) for the current one', async () => {
  const count = async (fixture: string, stem: string): Promise<number> => {
    const d = await readSlimeDump(fixturePath(fixture, 'rollout_data', `${stem}.pt`));
    return timelineCache(d.samples, '', 0).rows.flatMap((r) => r.items).filter((i) => / \[(P|D)\]$/.test(String(i.name))).length;
  };
  assert.equal(await count('slime-trace-legacy-pd', '0'), 30);
  assert.equal(await count('slime-trace-legacy-pd', '1'), 13);
  assert.equal(await count('slime-trace', '0'), 0);
});

test('round6 is Python round(x, 6): half to even on the exact binary value', () => {
  assert.equal(round6(1767225600.2180005), 1767225600.218);
  assert.equal(round6(0.0000005), 0); // 5e-7 is slightly below the tie in binary
  assert.equal(round6(2.5e-6), 3e-6);
  assert.equal(round6(1.0000005), 1.000001);
});
