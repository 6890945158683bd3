// Two runs at the same step (`runs=A,B` beside the chosen run): reward and response length distributions
// overlaid in each run's colour, and each run's zero-std group share; either run's groups table one click away.
import { useEffect } from 'preact/hooks';
import { getJson } from '../../api.ts';
import { ErrorNote, Loading } from '../../components/status.tsx';
import { fmtNum } from '../../format.ts';
import { href } from '../../route.ts';
import { loadRuns, runColor, runList, runPath, shownRunId } from '../../runs.ts';
import { realGroups } from './stepFigures.ts';
import { useStore } from '../../store.ts';
import type { RolloutTable, RunListing, StepDiff } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { Histogram } from '../diff/charts.tsx';

/** The distributions compared (the step diff's names). */
const COMPARED = ['reward', 'response_length'];

/** The run compared with the shown one: the first other run named in `runs=`, else null. */
export function comparedRun(runs: readonly RunListing[] | null, param: string | null): RunListing | null {
  const shown = shownRunId(runs);
  const ids = (param ?? '').split(',').filter((x) => x && x !== shown);
  return runs?.find((r) => r.id === ids[0]) ?? null;
}

function zeroStdShare(t: RolloutTable): { zero: number; groups: number } {
  const real = realGroups(t.rows);
  return { zero: real.filter((r) => r.zero_std === true).length, groups: real.length };
}

export function RunsCompare({ id, params }: { id: number; params: URLSearchParams }) {
  const all = useStore(runList);
  useEffect(() => void loadRuns(), []);
  const other = comparedRun(all, params.get('runs'));
  const shown = shownRunId(all);
  const key = other && shown ? `${shown}|${other.id}|${id}` : null;
  const diff = useApi(key, (signal) => getJson<StepDiff>('rlsight/diff/steps', { a: id, b: id, run_a: shown, run_b: other!.id }, signal));
  const groups = useApi(key, (signal) =>
    Promise.all([getJson<RolloutTable>(`rollout/${id}/groups`, {}, signal), getJson<RolloutTable>(runPath(other!, `rollout/${id}/groups`), {}, signal)]),
  );
  if (!key || !all || !other || !shown) {
    if (all && all.length > 1 && shown) {
      const next = all.find((r) => r.id !== shown)!;
      return (
        <p class="hint">
          <a href={href(`/rollout/${id}`, { runs: `${shown},${next.id}` })} data-testid="rollout-compare">
            compare step {id} with {next.id}
          </a>
        </p>
      );
    }
    return null;
  }
  const colors = { a: runColor(all, shown), b: runColor(all, other.id) };
  const legend = (
    <span class="compare-legend">
      <span class="swatch" style={{ background: colors.a }} /> {shown} <span class="swatch" style={{ background: colors.b }} /> {other.id}
    </span>
  );
  return (
    <section class="panel rollout-compare" data-testid="rollout-runs-compare">
      <h3>
        Step {id}: {shown} against {other.id} {legend}{' '}
        <a href={href(`/rollout/${id}`, { runs: null })} class="hint">
          close
        </a>
      </h3>
      {diff.error ? (
        <ErrorNote error={diff.error} />
      ) : !diff.data ? (
        <Loading what={`step ${id} of ${other.id}`} />
      ) : (
        <div class="compare-row">
          {diff.data.distributions
            .filter((d) => COMPARED.includes(d.metric))
            .map((d) => (
              <figure class="compare-dist" data-metric={d.metric}>
                <figcaption>
                  {d.label}: <b style={{ color: colors.a }}>{fmtNum(d.a.mean)}</b> vs <b style={{ color: colors.b }}>{fmtNum(d.b.mean)}</b> (mean)
                </figcaption>
                <Histogram d={d} colors={colors} />
              </figure>
            ))}
          {groups.data && (
            <figure class="compare-dist" data-metric="zero_std">
              <figcaption>zero-std group share</figcaption>
              {[
                [shown, groups.data[0], colors.a],
                [other.id, groups.data[1], colors.b],
              ].map(([run, t, color]) => {
                const z = zeroStdShare(t as RolloutTable);
                const share = z.groups ? z.zero / z.groups : null;
                return (
                  <div class="share-bar" data-run={run as string}>
                    <span class="share-label">{run as string}</span>
                    <span class="share-track">
                      <span class="share-fill" style={{ width: `${(share ?? 0) * 100}%`, background: color as string }} />
                    </span>
                    <span class="share-value" data-testid="zero-std-share">
                      {share === null ? '—' : fmtNum(share)}
                    </span>{' '}
                    <span class="hint">
                      ({z.zero}/{z.groups})
                    </span>
                  </div>
                );
              })}
              <p class="hint">
                groups table:{' '}
                <a href={href(`/rollout/${id}`, { tab: 'groups' })}>{shown}</a> ·{' '}
                <a href={href(`/rollout/${id}`, { tab: 'groups', run: other.id, runs: `${other.id},${shown}` })}>{other.id}</a>
              </p>
            </figure>
          )}
        </div>
      )}
    </section>
  );
}
