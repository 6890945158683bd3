// The advisory over a served run: an abort storm in the newest hour is judged on the recent window,
// and quoted against the whole run, as the reference does.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openRun } from '../src/server/run.ts';
import { copyFixtureRun } from './support/fixtures.ts';

test('an abort storm two partitions later is found and quoted over the whole run', async () => {
  const copy = copyFixtureRun();
  try {
    // One engine's counters every 60 s over hours 14 and 15 (UTC) of the fixture's day: 10 requests per
    // scrape, and 5 client aborts per scrape only in the last 30 minutes.
    const byHour = new Map<string, string[]>();
    const last = 1007940;
    for (let ts = 1000800, i = 0; ts <= last; ts += 60, i++) {
      const aborted = Math.max(0, Math.floor((ts - (last - 1800)) / 60) + 1) * 5;
      const hour = ts < 1004400 ? '19700112_14' : '19700112_15';
      const lines = byHour.get(hour) ?? [];
      for (const [metric, value] of [
        ['sglang_num_requests_total', i * 10],
        ['sglang_num_aborted_requests_total', aborted],
      ] as const) {
        lines.push(JSON.stringify({ ts: ts + 0.5, addr: 'http://10.0.0.1:15000', metric, labels: {}, value }));
      }
      byHour.set(hour, lines);
    }
    for (const [hour, lines] of byHour) writeFileSync(join(copy.dir, 'dashboard', 'engine_series', `${hour}.jsonl`), `${lines.join('\n')}\n`);
    const run = await openRun(copy.dir);
    const answer = await run.advisory({ lowMfu: 0.15 });
    assert.deepEqual(answer.advisories, [
      {
        level: 'warning',
        message:
          '50% of engine requests were aborted client-side in the last 30min (155/310; 13% over the run) — request timeouts are poisoning samples',
      },
    ]);
    // Asked again with nothing changed, the same answer (from the cache).
    assert.deepEqual(await run.advisory({ lowMfu: 0.15 }), answer);
  } finally {
    copy.dispose();
  }
});
