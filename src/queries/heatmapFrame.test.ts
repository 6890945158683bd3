import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadGoldens } from '../../test/support/fixtures.ts';
import { decodeHeatmapFrame, encodeHeatmapFrame, pyJsonDumps } from './heatmapFrame.ts';

test('header JSON is written as Python json.dumps does: spaced separators, float keys, ensure_ascii', () => {
  assert.equal(
    pyJsonDumps({ rows: [{ node: 'n\u00e9"\\', gpu: 3, roles: [] }], x_buckets: 4, t0: 1000000, t1: 1e16, scale: { max: 100 }, palette: null }),
    '{"rows": [{"node": "n\\u00e9\\"\\\\", "gpu": 3, "roles": []}], "x_buckets": 4, "t0": 1000000.0, "t1": 1e+16, "scale": {"max": 100.0}, "palette": null}',
  );
  assert.equal(pyJsonDumps({ t0: NaN, t1: 0.5, n: 7 }), '{"t0": null, "t1": 0.5, "n": 7}');
});

test('frames round-trip and re-encode every golden heatmap byte for byte', () => {
  const hm = loadGoldens().filter((g) => g.request.startsWith('/api/timeline/heatmap') && g.status === 200);
  assert.ok(hm.length >= 18);
  for (const g of hm) {
    const bytes = Buffer.from(g.body.base64, 'base64');
    const { header, matrix } = decodeHeatmapFrame(bytes);
    assert.equal(header.x_buckets * header.rows.length, matrix.length, g.file);
    assert.equal(Buffer.compare(Buffer.from(encodeHeatmapFrame(header, matrix)), bytes), 0, g.file);
  }
});

test('a truncated frame is a clear error', () => {
  assert.throws(() => decodeHeatmapFrame(Uint8Array.from([1, 0])), /no header length/);
  assert.throws(() => decodeHeatmapFrame(Uint8Array.from([200, 0, 0, 0, 123])), /exceeds/);
});
