// slime's type rule, case by case, on a hand-built dump: a meta_info value counts in `perf/` only when
// `isinstance(v, (int, float))` holds in Python, it is not a bool and it is finite; the viewer cache
// keeps str/int/float/bool/None and writes anything else as its Python `str()`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { PyFloat } from '../formats/torch/value.ts';
import { saveTorch } from '../formats/torch/writer.ts';
import { readSlimeDump } from '../run/slime/dump.ts';
import { numpyStr } from '../run/slime/sample.ts';
import { NumpyScalar } from '../formats/torch/value.ts';
import { np, tracedSample } from '../../test/support/numpyScalar.ts';
import { requestPerfMetricsCompat, requestPerfMetricsFixed } from './slimePerf.ts';
import { timelineCache, type CacheSpanItem } from './slimeTimeline.ts';
import { plainJson, traceDetails } from './slimeTraceView.ts';

const dir = mkdtempSync(join(tmpdir(), 'rlsight-slime-types-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const REQUESTS = [
  // 0: a Python float counts; a numeric string and a bool do not.
  { e2e_latency: 1.0, queue_time: '0.5', decode_throughput: true },
  // 1: numpy float32 and int64 are not Python int/float; numpy float64 is a float subclass and counts.
  { e2e_latency: np('f4', 88.5), queue_time: np('f8', 0.25), decode_throughput: np('i8', 7) },
  // 2: NaN and ±inf are not finite: nothing valid, not profiled.
  { e2e_latency: NaN, queue_time: Infinity, decode_throughput: -Infinity },
  // 3: a Python int counts; None does not; a missing field is skipped.
  { e2e_latency: 3, queue_time: null },
  // 4: an integral float, a float and an int.
  { e2e_latency: new PyFloat(2), queue_time: 0.75, decode_throughput: 40 },
  // 5: no fields at all.
  {},
  // 6: a numeric string, a numpy bool and a float32 only: nothing valid.
  { e2e_latency: '1.25', queue_time: np('b1', true), decode_throughput: np('f4', 12) },
];

async function dump() {
  const path = join(dir, '0.pt');
  await saveTorch({ rollout_id: 0, samples: REQUESTS.map((a, i) => tracedSample(i, a)) } as never, path);
  return readSlimeDump(path);
}

test('perf/: only Python int/float (numpy float64 included), not bool, finite, per field; every statistic by hand', async () => {
  const d = await dump();
  // e2e_latency: 1.0 (r0), 3 (r3), 2.0 (r4). queue_time: 0.25 (r1, float64), 0.75 (r4). decode_throughput: 40 (r4).
  assert.deepEqual(requestPerfMetricsCompat(d.samples), {
    'request/e2e_latency/mean': 2,
    'request/e2e_latency/median': 2,
    'request/e2e_latency/max': 3,
    'request/e2e_latency/min': 1,
    'request/queue_time/mean': 0.5,
    'request/queue_time/median': 0.5,
    'request/queue_time/max': 0.75,
    'request/queue_time/min': 0.25,
    'decode/throughput/mean': 40,
    'decode/throughput/median': 40,
    'decode/throughput/max': 40,
    'decode/throughput/min': 40,
  });
  // Key order is slime's first-seen order: queue_time first appears with r1's float64, before decode_throughput (r4).
  assert.deepEqual(Object.keys(requestPerfMetricsCompat(d.samples)).map((k) => k.slice(0, k.lastIndexOf('/'))).filter((k, i, a) => a.indexOf(k) === i), ['request/e2e_latency', 'request/queue_time', 'decode/throughput']);
});

test('perf_fixed/: the same type rule; profiled_count counts requests with at least one valid field', async () => {
  const d = await dump();
  const m = requestPerfMetricsFixed(d.samples);
  assert.equal(m['request/count'], 7);
  // r0, r1 (float64 queue_time), r3, r4.
  assert.equal(m['request/profiled_count'], 4);
  assert.equal(m['request/e2e_latency/mean'], 2);
  assert.equal(m['request/e2e_latency/p50'], 2);
  assert.equal(m['request/queue_time/min'], 0.25);
  assert.equal(m['decode/throughput/max'], 40);
});

test('the viewer cache and the Trace view render values as _json_safe does: float32 88.5 is the string "88.5"', async () => {
  const d = await dump();
  const cache = timelineCache(d.samples, 'rollout_data/0.pt', 0);
  const endAttrs = (row: number) => {
    const r = cache.rows.find((x) => x.sample_index === row)!;
    const span = r.items.find((i) => i.type === 'span' && i.name === 'sglang_generate') as CacheSpanItem;
    return plainJson(span.attrs.end_attrs);
  };
  assert.deepEqual(endAttrs(1), { e2e_latency: '88.5', queue_time: 0.25, decode_throughput: '7' });
  assert.deepEqual(endAttrs(0), { e2e_latency: 1, queue_time: '0.5', decode_throughput: true });
  assert.deepEqual(endAttrs(6), { e2e_latency: '1.25', queue_time: 'True', decode_throughput: '12.0' });
  const details = traceDetails(d.samples[1]!)!;
  const shown = JSON.stringify(details.items);
  assert.match(shown, /"e2e_latency":"88\.5"/);
  assert.match(shown, /"decode_throughput":"7"/);
  assert.match(shown, /"queue_time":0\.25/);
});

test("numpy scalars print as Python's str() does", () => {
  assert.equal(numpyStr(new NumpyScalar('float32', Math.fround(0.1))), '0.1');
  assert.equal(numpyStr(new NumpyScalar('float32', Math.fround(88.5))), '88.5');
  assert.equal(numpyStr(new NumpyScalar('float32', 12)), '12.0');
  assert.equal(numpyStr(new NumpyScalar('float32', Math.fround(1e20))), '1e+20');
  assert.equal(numpyStr(new NumpyScalar('float32', Math.fround(1.5e-5))), '1.5e-05');
  assert.equal(numpyStr(new NumpyScalar('float32', Math.fround(123456789))), '123456790.0');
  assert.equal(numpyStr(new NumpyScalar('float32', NaN)), 'nan');
  assert.equal(numpyStr(new NumpyScalar('float32', -Infinity)), '-inf');
  assert.equal(numpyStr(new NumpyScalar('int64', 7)), '7');
  assert.equal(numpyStr(new NumpyScalar('int64', 2n ** 62n)), '4611686018427387904');
  assert.equal(numpyStr(new NumpyScalar('bool', false)), 'False');
});
