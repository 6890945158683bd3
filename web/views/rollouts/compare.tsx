// Two runs at the same step (`runs=A,B` beside the chosen run), or the other run's nearest step when it lacks that
// one: reward and response length distributions overlaid in each run's colour, and each run's zero-std group
// share; either run's groups table one click away.
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { getJson } from '../../api.ts';
import { ErrorNote, Loading } from '../../components/status.tsx';
import { fmtIntRanges, fmtNum } from '../../format.ts';
import { href, numParam, setParams } from '../../route.ts';
import { lacking, nearestStep, type RunMetas, useRunMetas } from '../../runMetas.ts';
import { loadRuns, runColor, runList, runPath, shownRunId } from '../../runs.ts';
import { stepParamNote } from '../../urlNotes.ts';
import { realGroups } from './stepFigures.ts';
import { liveTick } from '../../live.ts';
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

/** The ids `runs=` names besides the shown run, known to the server, each once, in order. */
function namedOthers(runs: readonly RunListing[], shown: string, param: string | null): string[] {
  const known = new Set(runs.map((r) => r.id));
  return [...new Set((param ?? '').split(',').filter((x) => x && x !== shown && known.has(x)))];
}

/**
 * Beside the shown run's step: with `runs=`, the first run it names that has rollout dumps, at the same step or
 * its nearest (`other_step=` picks another), the runs left out said; without, an offer of the runs with dumps.
 */
export function RunsCompare({ id, params }: { id: number; params: URLSearchParams }) {
  const all = useStore(runList);
  useEffect(() => void loadRuns(), []);
  const shown = shownRunId(all);
  const several = all !== null && all.length > 1 && shown !== null;
  const named = several ? namedOthers(all, shown, params.get('runs')) : [];
  const asked = several ? (named.length ? named : all.filter((r) => r.id !== shown).map((r) => r.id)) : [];
  // the compared runs' steps asked again as the shown run is followed (another run's steps are not announced here)
  const tick = useStore(liveTick);
  const metas = useRunMetas(asked, named.length ? tick : 0);
  if (!several) return null;
  if (!named.length) return metas ? <CompareOffer id={id} shown={shown} others={asked} metas={metas} /> : null;
  if (!metas) return <Loading what="what the compared runs hold" />;
  const other = named.find((x) => lacking('dumps', metas.get(x)) === null);
  const left = named.filter((x) => x !== other).map((x) => ({ id: x, why: lacking('dumps', metas.get(x)) }));
  const leftNote = left.length > 0 && (
    <p class="hint" data-testid="compare-left-out">
      Left out:{' '}
      {left.map((l, i) => (
        <>
          {i ? '; ' : ''}
          {l.id} ({l.why ?? 'Rollouts compares two runs'}
          {l.why === null && (
            <>
              {': '}
              <a href={href(`/rollout/${id}`, { runs: `${shown},${l.id}`, other_step: null })}>compare with it instead</a>
            </>
          )}
          )
        </>
      ))}
      .
    </p>
  );
  if (!other)
    return (
      <section class="panel rollout-compare" data-testid="rollout-runs-compare">
        <h3>
          Step {id} of {shown}: nothing to compare with{' '}
          <a href={href(`/rollout/${id}`, { runs: null, other_step: null })} class="hint">
            close
          </a>
        </h3>
        <p class="hint" data-testid="compare-left-out">
          No run named in <code>runs=</code> has rollout dumps: {left.map((l) => `${l.id} (${l.why})`).join(', ')}.
        </p>
      </section>
    );
  return <PairCompare id={id} all={all} shown={shown} other={all.find((r) => r.id === other)!} steps={metas.get(other)!.rollout_ids.train} params={params} leftNote={leftNote} />;
}

/** The runs a step can be compared with: those with rollout dumps, the ones holding this very step first. */
function CompareOffer({ id, shown, others, metas }: { id: number; shown: string; others: string[]; metas: RunMetas }) {
  const steps = (x: string) => metas.get(x)?.rollout_ids.train ?? [];
  const dumped = others.filter((x) => lacking('dumps', metas.get(x)) === null);
  const ranked = [...dumped.filter((x) => steps(x).includes(id)), ...dumped.filter((x) => !steps(x).includes(id))];
  if (!ranked.length) return null;
  const shownMax = 8;
  return (
    <p class="hint" data-testid="rollout-compare-offer">
      compare step {id} with{' '}
      {ranked.slice(0, shownMax).map((x, i) => (
        <>
          {i ? ' · ' : ''}
          <a href={href(`/rollout/${id}`, { runs: `${shown},${x}` })} data-testid="rollout-compare" data-run={x}>
            {x}
          </a>
          {!steps(x).includes(id) && <span class="muted">{` (no step ${id}: its step ${nearestStep(steps(x), id)})`}</span>}
        </>
      ))}
      {ranked.length > shownMax && (
        <>
          {' '}
          and {ranked.length - shownMax} more (<a href={href('/runs')}>runs table</a>)
        </>
      )}
    </p>
  );
}

function PairCompare(props: { id: number; all: RunListing[]; shown: string; other: RunListing; steps: number[]; params: URLSearchParams; leftNote: ComponentChildren }) {
  const { id, all, shown, other, steps, params, leftNote } = props;
  const chosenStep = numParam(params, 'other_step');
  const b = chosenStep !== null && steps.includes(chosenStep) ? chosenStep : nearestStep(steps, id)!;
  const key = `${shown}|${other.id}|${id}|${b}`;
  const diff = useApi(key, (signal) => getJson<StepDiff>('rlsight/diff/steps', { a: id, b, run_a: shown, run_b: other.id }, signal));
  const groups = useApi(key, (signal) =>
    Promise.all([getJson<RolloutTable>(`rollout/${id}/groups`, {}, signal), getJson<RolloutTable>(runPath(other, `rollout/${b}/groups`), {}, signal)]),
  );
  const paramNote = stepParamNote('other_step', params.get('other_step'), steps, b);
  const colors = { a: runColor(all, shown), b: runColor(all, other.id) };
  const legend = (
    <span class="compare-legend">
      <span class="swatch" style={{ background: colors.a }} /> {shown} <span class="swatch" style={{ background: colors.b }} /> {other.id}
    </span>
  );
  return (
    <section class="panel rollout-compare" data-testid="rollout-runs-compare">
      <h3>
        {b === id ? `Step ${id}: ${shown} against ${other.id}` : `Step ${id} of ${shown} against step ${b} of ${other.id}`} {legend}{' '}
        <a href={href(`/rollout/${id}`, { runs: null, other_step: null })} class="hint">
          close
        </a>
      </h3>
      <p class="hint compare-step">
        <label>
          step of {other.id}{' '}
          <select value={chosenStep !== null && steps.includes(chosenStep) ? String(b) : ''} aria-label={`step of ${other.id}`} data-testid="compare-step" onChange={(e) => setParams({ other_step: (e.target as HTMLSelectElement).value || null }, false)}>
            <option value="">{steps.includes(id) ? `the same (${id})` : `the nearest (${nearestStep(steps, id)})`}</option>
            {steps.map((s) => (
              <option value={String(s)}>{s}</option>
            ))}
          </select>
        </label>{' '}
        {chosenStep === null && b !== id && (
          <span data-testid="compare-step-note">
            {other.id} has no step {id} (its steps: {fmtIntRanges(steps)}): its nearest, step {b}, is shown.
          </span>
        )}
        {paramNote && (
          <span class="url-note" role="status" data-testid="url-note">
            {paramNote}
          </span>
        )}
      </p>
      {leftNote}
      {diff.error ? (
        <ErrorNote error={diff.error} />
      ) : !diff.data ? (
        <Loading what={`step ${b} of ${other.id}`} />
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
                <a href={href(`/rollout/${b}`, { tab: 'groups', run: other.id, runs: `${other.id},${shown}`, other_step: b === id ? null : id })}>{other.id}</a>
              </p>
            </figure>
          )}
        </div>
      )}
    </section>
  );
}
