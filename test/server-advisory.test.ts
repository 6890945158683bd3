// The advisory over a served run: an abort storm in the newest hour is judged on the recent window,
// and quoted against the whole run, as the reference does; rlsight's own route says which window and
// engines it concerns, while the reference route keeps the reference body.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openRun } from '../src/commands/openRun.ts';
import { startServer } from '../src/server/listen.ts';
import { copyFixtureRun } from './support/fixtures.ts';

const STORM_MESSAGE =
  '50% of engine requests were aborted client-side in the last 30min (155/310; 13% over the run) — request timeouts are poisoning samples';
const LAST_SCRAPE = 1007940.5;

/**
 * One engine's counters every 60 s over hours 14 and 15 (UTC) of the fixture's day: 10 requests per
 * scrape, and 5 client aborts per scrape only in the last 30 minutes. `quiet` adds engines that report
 * the counters without requests or aborts (they change no figure of the message).
 */
function writeAbortStorm(dir: string, quiet: string[] = []): void {
  const byHour = new Map<string, string[]>();
  const last = 1007940;
  for (let ts = 1000800, i = 0; ts <= last; ts += 60, i++) {
    const aborted = Math.max(0, Math.floor((ts - (last - 1800)) / 60) + 1) * 5;
    const hour = ts < 1004400 ? '19700112_14' : '19700112_15';
    const lines = byHour.get(hour) ?? [];
    for (const [addr, requests, aborts] of [['http://10.0.0.1:15000', i * 10, aborted] as const, ...quiet.map((a) => [a, 0, 0] as const)]) {
      for (const [metric, value] of [
        ['sglang_num_requests_total', requests],
        ['sglang_num_aborted_requests_total', aborts],
      ] as const) {
        lines.push(JSON.stringify({ ts: ts + 0.5, addr, metric, labels: {}, value }));
      }
    }
    byHour.set(hour, lines);
  }
  for (const [hour, lines] of byHour) writeFileSync(join(dir, 'dashboard', 'engine_series', `${hour}.jsonl`), `${lines.join('\n')}\n`);
}

test('an abort storm two partitions later is found and quoted over the whole run', async () => {
  const copy = copyFixtureRun();
  try {
    writeAbortStorm(copy.dir);
    const run = await openRun(copy.dir);
    const answer = await run.advisory({ lowMfu: 0.15 });
    // The only engine reporting is the whole fleet: no lane selection narrows it.
    assert.deepEqual(answer.advisories, [
      { level: 'warning', message: STORM_MESSAGE, window: { t0: LAST_SCRAPE - 1800, t1: LAST_SCRAPE }, lanes: null },
    ]);
    // Asked again with nothing changed, the same answer (from the cache).
    assert.deepEqual(await run.advisory({ lowMfu: 0.15 }), answer);
  } finally {
    copy.dispose();
  }
});

test('/api/rlsight/advisory locates each advisory; /api/advisory keeps the reference body', async () => {
  const copy = copyFixtureRun();
  const server = await startServer(await (async () => {
    writeAbortStorm(copy.dir, ['http://10.0.0.2:15000']);
    return openRun(copy.dir);
  })(), { port: 0 });
  try {
    const get = async (path: string): Promise<{ status: number; body: any }> => {
      const res = await fetch(new URL(path, server.url));
      return { status: res.status, body: await res.json() };
    };
    const located = await get('/api/rlsight/advisory');
    assert.equal(located.status, 200);
    assert.deepEqual(located.body.advisories, [
      {
        level: 'warning',
        message: STORM_MESSAGE,
        window: { t0: LAST_SCRAPE - 1800, t1: LAST_SCRAPE },
        lanes: 'engine:http://10.0.0.1:15000',
      },
    ]);
    const reference = await get('/api/advisory');
    assert.equal(reference.status, 200);
    assert.deepEqual(reference.body, { advisories: [{ level: 'warning', message: STORM_MESSAGE }], mfu: located.body.mfu });
    // The same window rules as the reference route, with the same errors.
    for (const q of ['t0=1000100&t1=1000000', 't0=1000000&t1=1100000', 't0=abc']) {
      const [mine, theirs] = [await get(`/api/rlsight/advisory?${q}`), await get(`/api/advisory?${q}`)];
      assert.equal(mine.status, 400, q);
      assert.deepEqual(mine, theirs, q);
    }
    // A window that misses the storm's engine counters still answers, located per rule.
    const windowed = await get('/api/rlsight/advisory?t0=1000000&t1=1000300');
    assert.equal(windowed.status, 200);
    for (const a of windowed.body.advisories) {
      assert.ok(a.window === null || (typeof a.window.t0 === 'number' && a.window.t1 >= a.window.t0), JSON.stringify(a));
      assert.ok(a.lanes === null || typeof a.lanes === 'string', JSON.stringify(a));
    }
  } finally {
    await server.close();
    copy.dispose();
  }
});
