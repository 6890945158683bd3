// The step's dump/* aggregates (served by /api/metrics), so the header states what the server measured for this step;
// with the sample count and staleness from its rows. An eval step (dump/* covers training steps) has its figures
// computed from its rows.
import { useMemo } from 'preact/hooks';
import { getJson } from '../../api.ts';
import { fmtNum } from '../../format.ts';
import type { DumpMetricKey, MetricSeries as Series, StepAggregateMetric, StepCoverage, TableRow as Row } from '../../../src/wire/index.ts';
import { leastStepCoverage, useStepwiseApi } from '../../components/coverage.tsx';
import { stepFigures, type StepFigures } from './stepFigures.ts';

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

interface Props {
  id: number;
  evaluation: boolean;
  tick: number;
  /** The step's sample rows once all are read (null while only its first ones are), and its groups. */
  rows: readonly Row[] | null;
  groups: readonly Row[] | null;
}

/** One figure of the grid. */
function Stat({ v, k, title }: { v: string; k: string; title: string }) {
  return (
    <div class="stat" title={title}>
      <div class="v">{v}</div>
      <div class="k">{k}</div>
    </div>
  );
}

export function DumpSummary({ id, evaluation, tick, rows, groups }: Props) {
  // Over the steps the server has read so far (it reads a big run's steps in the background, this one first
  // when it is asked for): asked again until this step is among them.
  const unreadIn = (series: Record<string, Series>): StepCoverage | undefined => {
    const coverage = leastStepCoverage(Object.values(series).map((s) => s.coverage));
    return coverage?.unread.some(([a, b]) => a <= id && id <= b) ? coverage : undefined;
  };
  const res = useStepwiseApi(evaluation ? null : 'dump', (signal) => getJson<Record<string, Series>>('metrics', { keys: DUMP_KEYS.join(','), x: 'rollout/step', progressive: true }, signal), tick, unreadIn);
  const unread = res.data !== null && unreadIn(res.data) !== undefined;
  // (the live tick re-renders this: the figures are read off the rows only when they change)
  const fromRows = useMemo(() => (rows ? stepFigures(rows, groups ?? [], evaluation) : null), [rows, groups, evaluation]);
  if (evaluation) return <EvalSummary figures={fromRows} groupsRead={groups !== null} />;
  if (res.error) return <p class="hint">dump/* aggregates unavailable for this run.</p>;
  if (!res.data || unread) return <div class="stats" aria-busy="true" />;
  return (
    <div class="stats" data-testid="dump-summary">
      <Stat v={fromRows ? String(fromRows.samples) : '…'} k="samples" title="samples: the step's rows" />
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
      <Stat v={fromRows ? fmtNum(fromRows.avg_staleness) : '…'} k="avg staleness" title="avg staleness: the mean of the samples' staleness (how far behind the step their oldest weight version is)" />
    </div>
  );
}

/** An eval step's figures, from its rows: the reward mean is its score. */
function EvalSummary({ figures: f, groupsRead }: { figures: StepFigures | null; groupsRead: boolean }) {
  if (!f) return <div class="stats" aria-busy="true" data-testid="eval-summary" />;
  const note = 'computed from the eval step\'s samples (the dump/* aggregates cover training steps)';
  return (
    <div class="stats" data-testid="eval-summary">
      <Stat v={String(f.samples)} k="samples" title="samples: the eval step's rows" />
      <Stat v={fmtNum(f.reward_mean)} k="reward mean" title={`reward mean: the mean of reward, ${note}`} />
      <Stat v={fmtNum(f.reward_std)} k="reward std" title={`reward std: sample standard deviation (ddof 1) of reward, ${note}`} />
      <Stat v={fmtNum(f.response_length_mean)} k="response length mean" title={`response length mean, ${note}`} />
      <Stat v={fmtNum(f.truncated_frac)} k="truncated frac" title={`truncated frac: the share of samples truncated, ${note}`} />
      <Stat
        v={!groupsRead ? '…' : f.zero_std.groups ? `${f.zero_std.zero}/${f.zero_std.groups}` : '—'}
        k="zero-std groups"
        title={f.zero_std.groups ? 'groups of 2+ samples whose rewards do not vary, of all such groups' : 'every prompt was sampled once: no group has a reward spread'}
      />
      <Stat v={fmtNum(f.mixed_version_frac)} k="mixed version frac" title={`mixed version frac: the share of samples generated across 2+ weight versions, ${note}`} />
      {f.mean_abs_lp_diff !== null && <Stat v={fmtNum(f.mean_abs_lp_diff)} k="mean abs lp diff" title={`mean abs lp diff, ${note}`} />}
      {f.mean_entropy !== null && <Stat v={fmtNum(f.mean_entropy)} k="mean entropy" title={`mean entropy, ${note}`} />}
    </div>
  );
}
