import { test } from 'node:test';
import assert from 'node:assert/strict';
import { joinPieces } from '../columnFrame.ts';
import { decodePersistedParse, encodePersistedParse } from './colsFile.ts';
import { EngineSeriesBlock } from './engineSeriesBlock.ts';
import type { ParseResult } from './parsedColumns.ts';

/** Engine rows of three metrics interleaved as a scrape writes them, series ids in `series` order. */
function engineParse(): ParseResult {
  const b = new EngineSeriesBlock('19700112_13', 0, 3600, 16);
  for (let t = 0; t < 500; t++) for (const s of [0, 1, 2, 3]) b.push(1000 + t + s / 10, s, t * 10 + s);
  const series: [string, string, string][] = [
    ['http://a:1', 'sglang_num_running_reqs', '{}'],
    ['http://a:1', 'sglang_gen_throughput', '{}'],
    ['http://b:1', 'sglang_num_running_reqs', '{}'],
    ['http://b:1', 'sglang_num_queue_reqs', '{}'],
  ];
  return { data: { stream: 'engine_series', columns: b.columns(), series }, offset: 100, lines: 2000, view: null, warnings: [[7, 'not JSON']] };
}

test('an engine hour written from columns it may consume is the same file, regrouped in those columns themselves', () => {
  const kept = engineParse();
  const consumed = engineParse();
  const source = { ino: 42, born: 0 };
  const copy = joinPieces(encodePersistedParse('engine_series', '19700112_13', source, kept));
  const columns = consumed.data.stream === 'engine_series' ? consumed.data.columns.cols : null;
  const pieces = encodePersistedParse('engine_series', '19700112_13', source, consumed, true);
  assert.deepEqual(joinPieces(pieces), copy);
  assert.ok(pieces.some((p) => p.buffer === columns!.ts.buffer), 'the regrouped ts are the parse’s own column');
  // the copying path left its columns in file order
  assert.deepEqual(kept.data.stream === 'engine_series' && Array.from(kept.data.columns.cols.series.subarray(0, 5)), [0, 1, 2, 3, 0]);
  const back = decodePersistedParse(copy, 'engine_series', '19700112_13', { size: 100, ino: 42, mtimeMs: 0 });
  assert.ok(back !== null && back.result.data.stream === 'engine_series');
  assert.deepEqual(Array.from(back.result.data.columns.cols.value.subarray(0, 6)), [0, 1, 2, 3, 10, 11]);
});
