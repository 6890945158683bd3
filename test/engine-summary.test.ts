// Engine gauges summarised hour by hour (what the advisory reads) equal the summaries of the whole
// window's served series, dp ranks folded or not, over windows that cut hours, with a misfiled line too.
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { encodeEngineSample } from '../src/formats/dashboard/index.ts';
import { engineSeries } from '../src/queries/engineSeries.ts';
import { engineSummaries, summarizeSeries, type EngineSeriesSummary } from '../src/queries/engineSummary.ts';
import { TelemetryStore } from '../src/run/telemetry/store.ts';

const H = 997200; // 1970-01-12 13:00 UTC
const HOURS = ['19700112_13', '19700112_14', '19700112_15'];
const ENGINES: [string, Record<string, string>[]][] = [
  ['http://10.0.0.1:15000', [{ engine_type: 'unified', dp_rank: '0' }, { engine_type: 'unified', dp_rank: '1' }]],
  ['http://10.0.0.2:15000', [{ engine_type: 'unified' }]],
];

/** One hour of scrapes every 5 s: running requests (integers) and token usage (fractions), per engine and dp rank. */
function hourText(h: number): string {
  let out = '';
  for (let s = 0; s < 3600; s += 5) {
    const ts = H + h * 3600 + s + 0.5;
    ENGINES.forEach(([addr, ranks], e) =>
      ranks.forEach((labels, r) => {
        out += encodeEngineSample({ ts, addr, metric: 'sglang_num_running_reqs', labels, value: (s * 7 + e * 3 + r * 11 + h) % 37 }) + '\n';
        out += encodeEngineSample({ ts, addr, metric: 'sglang_token_usage', labels, value: (((s * 13 + r * 7 + h) % 100) / 100) * 0.9 + 0.01 * e }) + '\n';
      }),
    );
  }
  return out;
}

const plain = (xs: EngineSeriesSummary[]) => xs.map((s) => ({ addr: s.addr, labels: s.labels, n: s.n, sum: s.sum.value(), max: s.max, tsMin: s.tsMin, tsMax: s.tsMax }));

function wholeWindow(s: TelemetryStore, metric: string, perDpRank: boolean, t0: number | null, t1: number | null) {
  return plain(summarizeSeries(engineSeries(s, { metric, perDpRank, t0, t1, maxPoints: Number.MAX_SAFE_INTEGER }).series));
}

describe('engine gauge summaries', () => {
  const root = mkdtempSync(join(tmpdir(), 'rlsight-engine-summary-'));
  const dir = join(root, 'dashboard');
  mkdirSync(join(dir, 'engine_series'), { recursive: true });
  HOURS.forEach((k, h) => writeFileSync(join(dir, 'engine_series', `${k}.jsonl`), hourText(h)));
  const windows: [number | null, number | null][] = [
    [null, null],
    [H + 1234.5, H + 3 * 3600 - 777.25],
    [H + 3599, H + 3601],
    [H + 7200.5, null],
  ];

  test('folded hour by hour they equal the whole window summarised at once', () => {
    try {
      const s = TelemetryStore.open(dir, { parseWorkers: 0 });
      for (const [t0, t1] of windows) {
        for (const metric of ['sglang_num_running_reqs', 'sglang_token_usage']) {
          for (const perDp of [false, true]) {
            const got = plain(engineSummaries(s, metric, perDp, t0, t1));
            assert.deepEqual(got, wholeWindow(s, metric, perDp, t0, t1), `${metric} ${perDp} ${t0} ${t1}`);
            assert.ok(t0 !== null || got.length === (perDp ? 3 : 2));
          }
        }
      }
      // the dp fold averages token usage per scrape: engine 1's series has one point per tick, not two
      const [e1] = plain(engineSummaries(s, 'sglang_token_usage', false));
      assert.equal(e1!.n, 3 * 720);
    } finally {
      /* the next test reuses the files */
    }
  });

  test('a line filed under another hour is folded with its own tick (the window is read whole)', () => {
    try {
      // a scrape of hour 13 that landed in hour 14's file: its rank-1 point must join rank 0's of that tick
      const late = encodeEngineSample({ ts: H + 100.5, addr: ENGINES[0]![0], metric: 'sglang_token_usage', labels: { engine_type: 'unified', dp_rank: '2' }, value: 0.25 });
      appendFileSync(join(dir, 'engine_series', `${HOURS[1]}.jsonl`), late + '\n');
      const s = TelemetryStore.open(dir, { parseWorkers: 0 });
      for (const perDp of [false, true]) {
        assert.deepEqual(plain(engineSummaries(s, 'sglang_token_usage', perDp)), wholeWindow(s, 'sglang_token_usage', perDp, null, null), String(perDp));
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
