// The step's dump/* aggregates (served by /api/metrics), so the header states what the server measured for this step.
import { getJson } from '../../api.ts';
import { fmtNum } from '../../format.ts';
import type { Series } from '../../types.ts';
import { useApi } from '../../useApi.ts';

export const DUMP_KEYS = [
  'dump/reward_mean',
  'dump/reward_std',
  'dump/response_length_mean',
  'dump/truncated_frac',
  'dump/zero_std_group_frac',
  'dump/mean_abs_lp_diff',
  'dump/mean_entropy',
  'dump/mixed_version_frac',
];

export function DumpSummary({ id, evaluation, tick }: { id: number; evaluation: boolean; tick: number }) {
  const res = useApi(evaluation ? null : 'dump', (signal) => getJson<Record<string, Series>>('metrics', { keys: DUMP_KEYS.join(','), x: 'rollout/step' }, signal), tick);
  if (evaluation) return <p class="hint">Eval step: the dump/* aggregates cover training steps only.</p>;
  if (res.error) return <p class="hint">dump/* aggregates unavailable for this run.</p>;
  if (!res.data) return <div class="stats" aria-busy="true" />;
  return (
    <div class="stats" data-testid="dump-summary">
      {DUMP_KEYS.map((k) => {
        const s = res.data![k];
        const i = s ? s.x.indexOf(id) : -1;
        return (
          <div class="stat" key={k} title={k}>
            <div class="v">{i >= 0 ? fmtNum(s!.y[i]) : '—'}</div>
            <div class="k">{k.slice(5).replace(/_/g, ' ')}</div>
          </div>
        );
      })}
    </div>
  );
}
