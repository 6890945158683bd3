// A custom trainer records its rollout samples through the Python client while `rlsight collect` runs:
// the collector writes one zstd Parquet file per step (DuckDB reads them), and the server answers Rollouts,
// Sample, Search, Health and Diff for the collected run; a step still arriving is a 503 with Retry-After.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { startCollectorService } from '../src/collect/service.ts';
import { createApp } from '../src/server/app.ts';
import { openRun } from '../src/commands/openRun.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = mkdtempSync(join(tmpdir(), 'rlsight-samples-'));
after(() => rmSync(root, { recursive: true, force: true }));

// two train steps of 2 groups x 3 samples and one eval step, as a custom trainer holds them
const TRAINER = `
import json, sys, rlsight
c = rlsight.connect(dump_details=sys.argv[1], node="10.0.0.1", gpus=[0], rank=0)
def sample(step, i, evaluation=False):
    n = 4 + i
    tokens = [100 + step * 10 + i] * 3 + list(range(200, 200 + n))
    answer = "the answer is %d" % (step * 10 + i)
    return {
        "sample_index": step * 100 + i, "group": i // 3,
        "messages": [{"role": "user", "content": "question %d of step %d" % (i, step)},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": "c%d" % i, "type": "function",
                      "function": {"name": "search", "arguments": "{\\"q\\": \\"zebra%d\\"}" % i}}]},
                     {"role": "tool", "tool_call_id": "c%d" % i, "content": "found"}],
        "response": answer, "tokens": tokens, "response_length": n,
        "reward": {"acc": float(i % 2), "format": 0.5}, "reward_key": "acc",
        "finish_reason": "truncated" if i == 5 else "completed",
        "loss_mask": [1] * n, "rollout_log_probs": [-0.5 - 0.01 * k for k in range(n)],
        "log_probs": [-0.52 - 0.01 * k for k in range(n)], "ref_log_probs": [-0.6] * n,
        "entropy": [0.8] * n, "advantages": [1.0 if i % 2 else -1.0] * n,
        "weight_versions": [str(step)], "timing": {"generate_s": 1.5 + i}, "metadata": {"source": "custom", "step": step},
    }
for step in (0, 1):
    c.samples(step, [sample(step, i) for i in range(6)])
c.samples(0, [sample(9, i) for i in range(2)], evaluation=True)
# an eval step of two datasets, each numbering its samples from 900
c.samples(1, [sample(9, i) for i in range(2)] + [dict(sample(8, i), sample_index=900 + i) for i in range(2)], evaluation=True)
ok = c.flush(60)
print(json.dumps({"flushed": ok, "stats": c.stats()}))
c.close()
`;

describe('samples recorded by a custom trainer', () => {
  const runDir = join(root, 'run');
  let app: ReturnType<typeof createApp>;
  const get = (path: string) => app.request(path, { headers: { host: '127.0.0.1' } });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const json = async (path: string): Promise<any> => {
    const r = await get(path);
    assert.equal(r.status, 200, `${path}: ${await r.clone().text()}`);
    return r.json();
  };

  before(async () => {
    const svc = await startCollectorService({ dashboardDir: join(runDir, 'dashboard'), port: 0, flushIntervalS: 0.2, log: () => {} });
    try {
      // the collector runs in this process: the trainer must not block its event loop
      const py = await promisify(execFile)('python3', ['-c', TRAINER, runDir], { env: { ...process.env, PYTHONPATH: join(REPO, 'python'), PYTHONDONTWRITEBYTECODE: '1' }, encoding: 'utf8', timeout: 120_000 });
      const report = JSON.parse(py.stdout.trim().split('\n').at(-1)!);
      assert.equal(report.flushed, true);
      assert.equal(report.stats.sent, 18);
    } finally {
      await svc.close();
    }
    app = createApp({ run: await openRun(runDir) });
  });

  it('says whether its collector records it: a run whose collector stopped is finished at once, even followed', async () => {
    assert.equal((await json('/api/meta')).recorder, 'stopped');
    const run = await openRun(runDir);
    const marker = join(runDir, 'dashboard', 'collector.json');
    try {
      assert.equal((await run.listing('run', true, { follow: true })).status, 'finished');
      // a collector at work leaves its address file there: the run is live while it writes
      writeFileSync(marker, '{}');
      assert.equal((await run.meta({ follow: true, useUtilizationOverview: false })).recorder, 'running');
      assert.equal((await run.listing('run', true, { follow: true })).status, 'live');
    } finally {
      rmSync(marker, { force: true });
      await run.close();
    }
  });

  it('writes one complete file per step, read by DuckDB with zstd pages', async () => {
    assert.deepEqual(readdirSync(join(runDir, 'samples')).sort(), ['eval_000000.parquet', 'eval_000001.parquet', 'rollout_000000.parquet', 'rollout_000001.parquet']);
    const db = await DuckDBInstance.create(':memory:');
    const con = await db.connect();
    const q = async (sql: string) => (await con.runAndReadAll(sql)).getRowObjectsJS();
    const file = join(runDir, 'samples', 'rollout_000001.parquet');
    const rows = await q(`SELECT position, "index", group_index, status, reward, response_length, len(tokens) AS n_tokens, list_sum(loss_mask) AS masked, advantages[1] AS adv, json_extract_string(sample, '$.metadata.source') AS source FROM read_parquet('${file}') ORDER BY position`);
    assert.equal(rows.length, 6);
    assert.deepEqual(rows[5], { position: 5, index: 105n, group_index: 1n, status: 'truncated', reward: 1, response_length: 9n, n_tokens: 12n, masked: 9n, adv: 1, source: 'custom' });
    const codecs = await q(`SELECT DISTINCT compression FROM parquet_metadata('${file}')`);
    assert.deepEqual(codecs.map((r) => r.compression), ['ZSTD']);
  });

  it('answers Rollouts and the Sample view (conversation with tool calls, tokens with the train side)', async () => {
    const meta = await json('/api/meta');
    assert.deepEqual(meta.rollout_ids, { train: [0, 1], eval: [0, 1] });
    const summary = await json('/api/rollout/1/summary');
    assert.equal(summary.rows.length, 6);
    const row = summary.rows.find((r: { sample_index: number }) => r.sample_index === 105);
    assert.equal(row.reward, 1);
    assert.equal(row.status, 'truncated');
    const messages = await json('/api/rollout/1/sample/103/messages');
    const text = JSON.stringify(messages);
    assert.match(text, /zebra3/);
    assert.match(text, /the answer is 13/);
    const tokens = await json('/api/rollout/1/sample/103/tokens');
    assert.equal(JSON.stringify(tokens).includes('-0.52'), true, 'train log-probs served');
    const evalSummary = await json('/api/rollout/0/summary?eval=true');
    assert.equal(evalSummary.rows.length, 2);
    assert.deepEqual(evalSummary.rows.map((r: { sample_index: number }) => r.sample_index), [900, 901]);
    // a step whose indices repeat is numbered by place, so each row opens its own sample
    const twoSets = await json('/api/rollout/1/summary?eval=true');
    assert.deepEqual(twoSets.rows.map((r: { sample_index: number }) => r.sample_index), [0, 1, 2, 3]);
    const second = await json('/api/rollout/1/sample/2/messages?eval=true');
    assert.match(JSON.stringify(second.messages), /question 0 of step 8/);
    assert.match(JSON.stringify((await json('/api/rollout/1/sample/0/messages?eval=true')).messages), /question 0 of step 9/);
  });

  it('finds samples by text (Search), and has a Health board and a step Diff', async () => {
    const r = await get('/api/rlsight/search?q=zebra4&limit=10');
    assert.equal(r.status, 200);
    const matches = (await r.text()).trim().split('\n').map((l) => JSON.parse(l)).filter((m) => m.type === 'match');
    assert.deepEqual(matches.map((m) => [m.step, m.sample_index]).sort(), [[0, 4], [1, 104]]);
    const health = await json('/api/rlsight/health');
    const text = JSON.stringify(health);
    // the train side's log-probs differ from the rollout's by 0.02: lp_drift has a value
    assert.match(text, /"lp_drift"/);
    const summary = await json('/api/rollout/0/summary');
    const drift = summary.rows.map((r: { mean_abs_lp_diff: number }) => r.mean_abs_lp_diff);
    assert.ok(drift.every((x: number) => Math.abs(x - 0.02) < 1e-6), JSON.stringify(drift));
    const diff = await json('/api/rlsight/diff/steps?a=0&b=1');
    assert.deepEqual([diff.a.step, diff.b.step], [0, 1]);
    assert.equal(diff.distributions.find((d: { metric: string }) => d.metric === 'mean_abs_lp_diff').a.n, 6);
  });

  it('answers a step whose samples are still arriving with 503 and Retry-After', async () => {
    // while a collector runs (its collector.json is there; the one above has stopped and removed it)
    writeFileSync(join(runDir, 'dashboard', 'collector.json'), JSON.stringify({ address: 'http://127.0.0.1:1', token: 't', pid: 1, started_ts: 1 }));
    writeFileSync(join(runDir, 'samples', 'rollout_000002.parquet.pending'), '');
    const app2 = createApp({ run: await openRun(runDir) });
    const r = await app2.request('/api/rollout/2/summary', { headers: { host: '127.0.0.1' } });
    assert.equal(r.status, 503, await r.clone().text());
    assert.ok(r.headers.get('retry-after'));
    assert.ok(existsSync(join(runDir, 'samples', 'rollout_000001.parquet')));
  });

  it("computes no slime metric its samples cannot give, nor one of a family the trainer logs itself", async () => {
    const keys = async (): Promise<string[]> => {
      const run = await openRun(runDir);
      try {
        return (await run.meta({ follow: false, useUtilizationOverview: false })).metric_keys;
      } finally {
        await run.close();
      }
    };
    const before = await keys();
    // computed from the samples: their lengths and rewards, not a prefix cache or request traces they do not have
    assert.ok(before.includes('rollout/response_len/max'), before.join(', '));
    assert.ok(!before.some((k) => k.includes('prefix_cache') || k.includes('cached_tokens') || k.startsWith('perf_fixed/')), before.join(', '));
    // the trainer logs its own rollout/ keys: those are the run's, none computed beside them
    appendFileSync(join(runDir, 'dashboard', 'metrics.jsonl'), JSON.stringify({ ts: 2e9, step_key: 'rollout/step', step: 0, metrics: { 'rollout/step': 0, 'rollout/response_len/mean': 48.75 } }) + '\n');
    const after = await keys();
    assert.ok(after.includes('rollout/response_len/mean'));
    assert.ok(!after.includes('rollout/response_len/max'), after.join(', '));
  });
});
