// The demo's second run: the same recipe, whose share of zero-std groups climbs while the healthy run's stays low.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openRun } from '../commands/openRun.ts';
import { generateDemoRun } from './index.ts';

const KEY = 'rollout/zero_std_group_ratio';
let base: string;
const ratios: Record<string, number[]> = {};
const names: Record<string, string | null> = {};

before(async () => {
  base = mkdtempSync(join(tmpdir(), 'rlsight-demo-collapse-'));
  for (const collapse of [false, true]) {
    const dir = join(base, collapse ? 'collapse' : 'healthy');
    await generateDemoRun(dir, { collapse, seed: 3 });
    const run = await openRun(dir);
    const series = await run.metrics({ keys: [KEY], x: 'rollout/step' });
    ratios[collapse ? 'collapse' : 'healthy'] = series[KEY].y as number[];
    names[collapse ? 'collapse' : 'healthy'] = (await run.meta({ follow: false, useUtilizationOverview: false })).run_name;
    await run.close();
  }
});
after(() => rmSync(base, { recursive: true, force: true }));

test('both runs start alike; the collapsing run ends with far more zero-std groups', () => {
  const { healthy, collapse } = ratios;
  assert.equal(healthy.length, collapse.length);
  assert.equal(healthy[0], collapse[0], 'step 0 is the same draw in both runs');
  assert.ok(collapse.at(-1)! > healthy.at(-1)! + 0.25, `healthy ${healthy} vs collapse ${collapse}`);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  assert.ok(mean(collapse.slice(1)) > mean(healthy.slice(1)) + 0.15, `healthy ${healthy} vs collapse ${collapse}`);
});

test('the runs are named apart', () => {
  assert.notEqual(names.healthy, names.collapse);
  assert.match(names.collapse ?? '', /-collapse$/);
});
