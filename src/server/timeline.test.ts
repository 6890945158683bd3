// rlsight's lane-selection endpoint over the fixture run: the lanes a grammar picks, and the reference's errors.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readFixtureJson } from '../../test/support/fixtures.ts';
import { servedFixture } from '../../test/support/servedFixture.ts';

describe('/api/rlsight/lanes', () => {
  const served = servedFixture();

  const get = (q: string) => served.get(`/api/rlsight/lanes${q}`);

  test('answers the lane-index entries a selection picks, in index order', async () => {
    const all = (await (await get('')).json()) as { lanes: { node: string; gpu: number; index: number; roles: string[] }[] };
    const topology = readFixtureJson('miles-demo', 'golden', '001.json').body.lanes as { node: string; gpu: number; index: number }[];
    assert.deepEqual(all.lanes.map(({ node, gpu, index }) => ({ node, gpu, index })), topology);
    const picked = (await (await get('?lanes=g:3,%20g:1')).json()) as typeof all;
    assert.deepEqual(picked.lanes.map((l) => l.index), [1, 3]);
    assert.deepEqual((await (await get('?lanes=node:10.9.9.9')).json()), { lanes: [] });
  });

  test('a selection that does not parse is the same 400 the timeline endpoints give', async () => {
    const golden = readFixtureJson('miles-demo', 'golden', '259.json'); // /api/timeline/phases?lanes=bananas
    const res = await get('?lanes=bananas');
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), golden.body);
  });
});
