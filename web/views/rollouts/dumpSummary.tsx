// The step's dump/* aggregates (served by /api/metrics), so the header states what the server measured for this step.
import { getJson } from '../../api.ts';
import { fmtNum } from '../../format.ts';
import type { DumpMetricKey, MetricSeries as Series, StepAggregateMetric, StepCoverage } from '../../../src/wire/index.ts';
import { leastStepCoverage, useStepwiseApi } from '../../components/coverage.tsx';

/** Each step aggregate the server computes, with its label; the type makes the list complete. */
const LABELS: Record<StepAggregateMetric, string> = {
  reward_mean: 'reward mean',
  reward_std: 'reward std',
  response_length_mean: 'response length mean',
  truncated_frac: 'truncated frac',
  zero_std_group_frac: 'zero std group frac',
  mean_abs_lp_diff: 'mean abs lp diff',
  mean_entropy: 'mean entropy',
  mixed_version_frac: 'mixed version frac',
};
export const DUMP_KEYS = Object.keys(LABELS).map((m) => `dump/${m}` as DumpMetricKey);

export function DumpSummary({ id, evaluation, tick }: { id: number; evaluation: boolean; tick: number }) {
  // Over the steps the server has read so far (it reads a big run's steps in the background, this one first
  // when it is asked for): asked again until this step is among them.
  const unreadIn = (series: Record<string, Series>): StepCoverage | undefined => {
    const coverage = leastStepCoverage(Object.values(series).map((s) => s.coverage));
    return coverage?.unread.some(([a, b]) => a <= id && id <= b) ? coverage : undefined;
  };
  const res = useStepwiseApi(evaluation ? null : 'dump', (signal) => getJson<Record<string, Series>>('metrics', { keys: DUMP_KEYS.join(','), x: 'rollout/step', progressive: true }, signal), tick, unreadIn);
  const unread = res.data !== null && unreadIn(res.data) !== undefined;
  if (evaluation) return <p class="hint">Eval step: the dump/* aggregates cover training steps only.</p>;
  if (res.error) return <p class="hint">dump/* aggregates unavailable for this run.</p>;
  if (!res.data || unread) return <div class="stats" aria-busy="true" />;
  return (
    <div class="stats" data-testid="dump-summary">
      {DUMP_KEYS.map((k) => {
        const s = res.data![k];
        const i = s ? s.x.indexOf(id) : -1;
        return (
          <div class="stat" key={k} title={k}>
            <div class="v">{i >= 0 ? fmtNum(s!.y[i]) : '—'}</div>
            <div class="k">{LABELS[k.slice(5) as StepAggregateMetric]}</div>
          </div>
        );
      })}
    </div>
  );
}
