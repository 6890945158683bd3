import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildEngineParts, dpFoldFor, foldedLabelsJson, meanParts, rateParts, type EngineRows, type EngineSeriesIdentity } from './engineParts.ts';

function rows(list: [number, number, number][]): EngineRows {
  return {
    ts: Float64Array.from(list.map((r) => r[0])),
    series: Uint32Array.from(list.map((r) => r[1])),
    value: Float64Array.from(list.map((r) => r[2])),
    length: list.length,
  };
}

const IDS: EngineSeriesIdentity[] = [
  { addr: 'http://b:1', labelsJson: '{"engine_type":"unified","dp_rank":"0"}' },
  { addr: 'http://b:1', labelsJson: '{"engine_type":"unified","dp_rank":"1"}' },
  { addr: 'http://a:1', labelsJson: '{}' },
];

test('folded labels drop dp_rank and nulls and sort keys, Python-encoded', () => {
  assert.equal(foldedLabelsJson('{"engine_type":"unified","dp_rank":"1"}'), '{"engine_type": "unified"}');
  assert.equal(foldedLabelsJson('{"dp_rank":"1","engine_type":null}'), '{}');
  assert.equal(foldedLabelsJson('{"z":"1","a":"2"}'), '{"a": "2", "z": "1"}');
  assert.equal(dpFoldFor('sglang_token_usage', false), 'mean');
  assert.equal(dpFoldFor('sglang_num_running_reqs', false), 'sum');
  assert.equal(dpFoldFor('sglang_token_usage', true), 'none');
});

test('DP fold sums (or averages) ranks per exact ts; parts sorted by (addr, labels), each by ts', () => {
  const r = rows([
    [2, 0, 3],
    [2, 1, 4],
    [1, 2, 9],
    [0, 2, 8],
    [4, 0, 1],
    [4, 1, 5],
  ]);
  const summed = buildEngineParts(r, IDS, 'sum');
  assert.deepEqual(
    summed.map((p) => ({ addr: p.addr, labels: p.labels, ts: [...p.ts], value: [...p.value] })),
    [
      { addr: 'http://a:1', labels: {}, ts: [0, 1], value: [8, 9] },
      { addr: 'http://b:1', labels: { engine_type: 'unified' }, ts: [2, 4], value: [7, 6] },
    ],
  );
  const averaged = buildEngineParts(r, IDS, 'mean');
  assert.deepEqual([...averaged[1].value], [3.5, 3]);
  const perRank = buildEngineParts(r, IDS, 'none');
  assert.deepEqual(
    perRank.map((p) => [p.addr, p.labels.dp_rank ?? null, [...p.value]]),
    [
      ['http://a:1', null, [8, 9]],
      ['http://b:1', '0', [3, 1]],
      ['http://b:1', '1', [4, 5]],
    ],
  );
});

test('engines are in lane order: their addresses by their numbers (10.0.0.2 before 10.0.0.10)', () => {
  const ids: EngineSeriesIdentity[] = ['http://10.0.0.10:30000', 'http://10.0.0.2:30000', 'http://10.0.0.100:30000', 'http://10.0.0.2:3000'].map((addr) => ({ addr, labelsJson: '{}' }));
  const parts = buildEngineParts(rows(ids.map((_, i) => [0, i, i])), ids, 'sum');
  assert.deepEqual(
    parts.map((p) => p.addr),
    ['http://10.0.0.2:3000', 'http://10.0.0.2:30000', 'http://10.0.0.10:30000', 'http://10.0.0.100:30000'],
  );
});

test('rates: counter resets and non-advancing time leave gaps, never negative values', () => {
  const [p] = buildEngineParts(rows([[0, 2, 0], [2, 2, 10], [4, 2, 3], [6, 2, 7], [6, 2, 7], [8, 2, 11]]), IDS, 'none');
  const [rate] = rateParts([p]);
  assert.deepEqual([...rate.ts], [2, 6, 8]);
  assert.deepEqual([...rate.value], [5, 2, 2]);
  // a single point, or only resets: the part is omitted
  assert.deepEqual(rateParts(buildEngineParts(rows([[0, 2, 5]]), IDS, 'none')), []);
  assert.deepEqual(rateParts(buildEngineParts(rows([[0, 2, 5], [1, 2, 1]]), IDS, 'none')), []);
});

test('histogram means fold ranks before differencing (count-weighted) and join on equal ts', () => {
  // rank 0: +8 s over +4 requests; rank 1: +3 s over +1 request -> 11/5
  const sums = buildEngineParts(rows([[0, 0, 0], [0, 1, 0], [2, 0, 8], [2, 1, 3], [3, 0, 8]]), IDS, 'sum');
  const counts = buildEngineParts(rows([[0, 0, 0], [0, 1, 0], [2, 0, 4], [2, 1, 1], [5, 0, 9]]), IDS, 'sum');
  const [mean] = meanParts(sums, counts);
  assert.deepEqual([...mean.ts], [2]);
  assert.deepEqual([...mean.value], [11 / 5]);
  // idle interval (Δcount = 0) is a gap
  const s2 = buildEngineParts(rows([[0, 2, 1], [1, 2, 1], [2, 2, 3]]), IDS, 'sum');
  const c2 = buildEngineParts(rows([[0, 2, 1], [1, 2, 1], [2, 2, 2]]), IDS, 'sum');
  const [m2] = meanParts(s2, c2);
  assert.deepEqual([...m2.ts], [2]);
  assert.deepEqual([...m2.value], [2]);
  // a sum part without its count part is skipped
  assert.deepEqual(meanParts(s2, counts), []);
});
