// A slime run recorded live with flags only: a stand-in trainer with slime's call shapes (Sample objects with
// slime's fields and to_dict(), traces as slime's trace_utils writes them) calls rlsight.integrations.slime's
// two hooks for 2 train rollouts and 1 evaluation while `rlsight collect` runs. The recorded run is then
// answered like slime's own --dump-details dump of the same samples: metrics, Rollouts summary, Sample
// messages and tokens, the Trace view and its details.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startCollectorService } from '../src/collect/service.ts';
import { createApp } from '../src/server/app.ts';
import { openRun } from '../src/commands/openRun.ts';
import { fixturePath, readFixtureJson } from './support/fixtures.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = mkdtempSync(join(tmpdir(), 'rlsight-slime-live-'));
after(() => rmSync(root, { recursive: true, force: true }));

type App = ReturnType<typeof createApp>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function get(app: App, path: string): Promise<any> {
  const r = await app.request(path, { headers: { host: '127.0.0.1' } });
  assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
  return r.json();
}

const close = (a: number, b: number): boolean => a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));

describe('slime recorded live through its hook flags', () => {
  const live = join(root, 'live');
  let liveApp: App;
  let dumpApp: App;
  let trainer: { returned: boolean[] };

  before(async () => {
    const svc = await startCollectorService({ dashboardDir: join(live, 'dashboard'), port: 0, flushIntervalS: 0.2, log: () => {} });
    try {
      // the collector runs in this process: the trainer must not block its event loop
      const r = await promisify(execFile)('python3', [join(REPO, 'test', 'support', 'slime_standin.py'), fixturePath('slime-trace')], {
        env: { ...process.env, RLSIGHT_DUMP_DETAILS: live, PYTHONDONTWRITEBYTECODE: '1' },
        encoding: 'utf8',
        timeout: 120_000,
      });
      trainer = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
    } finally {
      await svc.close();
    }
    // slime's own --dump-details layout of the same samples
    const dump = join(root, 'dump');
    mkdirSync(join(dump, 'rollout_data'), { recursive: true });
    for (const f of ['0.pt', '1.pt', 'eval_0.pt']) copyFileSync(fixturePath('slime-trace', 'rollout_data', f), join(dump, 'rollout_data', f));
    liveApp = createApp({ run: await openRun(live) });
    dumpApp = createApp({ run: await openRun(dump) });
  });

  it('both hooks return False (slime logs as usual) and the trainer exited having delivered everything', () => {
    assert.deepEqual(trainer.returned, [false, false, false]);
  });

  it('has every metric slime logged at its step under its exact name (perf/ with the real rollout_time), as the dump has it', async () => {
    const logged: [string, number, Record<string, number>][] = [
      ['rollout/step', 0, readFixtureJson('slime-trace', 'golden', 'perf_0.json').log_rollout_data.logged],
      ['rollout/step', 1, readFixtureJson('slime-trace', 'golden', 'perf_1.json').log_rollout_data.logged],
      ['eval/step', 0, readFixtureJson('slime-trace', 'golden', 'eval_metrics_0.json').log_eval_rollout_data.logged],
    ];
    let compared = 0;
    for (const [x, step, values] of logged) {
      const keys = Object.keys(values).filter((k) => k !== x);
      const q = `/api/metrics?keys=${encodeURIComponent(keys.join(','))}&x=${encodeURIComponent(x)}`;
      const mine = await get(liveApp, q);
      const theirs = await get(dumpApp, q);
      for (const k of keys) {
        const at = mine[k].x.indexOf(step);
        assert.ok(at >= 0, `${k} at ${x} ${step}`);
        assert.ok(close(mine[k].y[at], values[k]), `${k}: ${mine[k].y[at]} != slime's ${values[k]}`);
        const t = theirs[k]?.x.indexOf(step) ?? -1;
        // the dump lacks what needs rollout_time (and the extra metrics): only what it has is compared
        if (t >= 0) {
          assert.ok(close(mine[k].y[at], theirs[k].y[t]), `${k}: live ${mine[k].y[at]} != dump ${theirs[k].y[t]}`);
          compared++;
        }
      }
    }
    assert.ok(compared > 40, `${compared} values compared with the dump's`);
  });

  it('lists the eval metrics under the dataset names slime logged, not a second time as dataset<i>', async () => {
    const meta = await get(liveApp, '/api/meta');
    assert.deepEqual(meta.metric_keys.filter((k: string) => /^eval\/dataset\d/.test(k)), []);
    for (const k of ['eval/aime24', 'eval/gsm8k_test', 'eval/gsm8k_test/response_len/mean']) assert.ok(meta.metric_keys.includes(k), k);
  });

  it('answers the Rollouts summary, Sample messages and tokens as for the dump', async () => {
    for (const [id, evaluation] of [[0, false], [1, false], [0, true]] as const) {
      const q = evaluation ? '?eval=true' : '';
      const a = await get(liveApp, `/api/rollout/${id}/summary${q}`);
      const b = await get(dumpApp, `/api/rollout/${id}/summary${q}`);
      assert.deepEqual(a, b, `rollout ${id}${q} summary`);
      assert.ok(a.rows.length >= 7);
      for (const row of a.rows as { sample_index: number }[]) {
        for (const part of ['messages', 'tokens']) {
          const path = `/api/rollout/${id}/sample/${row.sample_index}/${part}${q}`;
          assert.deepEqual(await get(liveApp, path), await get(dumpApp, path), path);
        }
      }
    }
  });

  it('answers the Trace view and its details as for the dump', async () => {
    for (const [id, evaluation] of [[0, false], [1, false], [0, true]] as const) {
      const q = `rollout_id=${id}${evaluation ? '&eval=true' : ''}`;
      const a = await get(liveApp, `/api/rlsight/trace?${q}`);
      const b = await get(dumpApp, `/api/rlsight/trace?${q}`);
      assert.equal(a.has_traces, true);
      assert.deepEqual(a, b, `trace ${q}`);
      for (let row = 0; row < a.rows.length; row++) {
        const path = `/api/rlsight/trace/details?${q}&row=${row}`;
        assert.deepEqual(await get(liveApp, path), await get(dumpApp, path), path);
      }
    }
  });
});
