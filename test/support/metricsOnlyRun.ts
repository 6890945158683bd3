// A run `rlsight collect --tensorboard LOGDIR` recorded with nothing else reporting to its collector: logged
// metrics on `tensorboard/step`, the collector's write-ahead log (it stopped), no dumps and no telemetry.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ageTree } from './fixtures.ts';

/** A run the collector recorded from a TensorBoard logdir alone: logged metrics on `tensorboard/step`, its write-ahead log, nothing else. */
export function placeMetricsOnlyRun(dir: string, steps: number): void {
  const dashboard = join(dir, 'dashboard');
  mkdirSync(join(dashboard, 'wal'), { recursive: true });
  writeFileSync(join(dashboard, 'meta.json'), JSON.stringify({ run_name: 'tb-only', start_ts: 1_000_000, args: {}, schema_version: 1 }));
  const lines: string[] = [];
  for (let s = 0; s < steps; s++) {
    lines.push(JSON.stringify({ ts: 1_000_000 + s, step_key: 'tensorboard/step', step: s, metrics: { 'train/loss': 2 - s / steps } }));
    lines.push(JSON.stringify({ ts: 1_000_000 + s, step_key: 'tensorboard/step', step: s, metrics: { 'rollout/raw_reward': s / steps } }));
  }
  writeFileSync(join(dashboard, 'metrics.jsonl'), `${lines.join('\n')}\n`);
  writeFileSync(join(dashboard, 'tensorboard_runs.json'), JSON.stringify({ runs: { '': false }, keys: { 'train/loss': false, 'rollout/raw_reward': false } }));
  writeFileSync(join(dashboard, 'wal', '000000000001.log'), 'RLWAL\n');
  ageTree(dir);
}
