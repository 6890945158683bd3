import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { appendDemoStep, generateDemoRun } from './demoRun.ts';

test('a demo with history: metrics for every step, dumps for the detailed ones, which carry on from the history', async () => {
  const base = mkdtempSync(join(tmpdir(), 'rlsight-history-'));
  try {
    const dir = join(base, 'run');
    const info = await generateDemoRun(dir, { steps: 2, historySteps: 10, seed: 3 });
    assert.deepEqual(info.rolloutIds.train, [10, 11]);
    assert.deepEqual(info.rolloutIds.eval, [10]);
    const records = readFileSync(join(dir, 'dashboard', 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { ts: number; step_key: string; step: number; metrics: Record<string, number> });
    const rolloutSteps = [...new Set(records.filter((r) => r.step_key === 'rollout/step').map((r) => r.step))];
    assert.deepEqual(rolloutSteps, [...Array(12).keys()], 'rollout/step 0..11, in order');
    for (let i = 1; i < records.length; i++) assert.ok(records[i]!.ts >= records[i - 1]!.ts - 60, 'history before the detailed steps');
    const stepTimes = records.filter((r) => r.metrics['perf/step_time'] !== undefined).map((r) => r.metrics['perf/step_time']!);
    assert.equal(stepTimes.length, 12);
    assert.ok(stepTimes.every((t) => t > 100 && t < 600), `plausible step times ${stepTimes}`);
    const meta = JSON.parse(readFileSync(join(dir, 'dashboard', 'meta.json'), 'utf8')) as { start_ts: number };
    assert.ok(records[0]!.ts < meta.start_ts, 'the history precedes this attempt');
    const next = await appendDemoStep(dir);
    assert.equal(next.step, 12, 'a live step continues the ids');
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});
