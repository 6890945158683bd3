// The step diff: a run and a step per side (run pickers only on a server holding several runs), the
// distributions overlaid, the groups that flipped, the samples that moved most and the metrics side by side.
import { getJson } from '../../api.ts';
import { Empty, ErrorNote, Loading } from '../../components/status.tsx';
import { fmtNum } from '../../format.ts';
import { numParam, setParams, type Route } from '../../route.ts';
import type { Meta, RunListing, StepDiff } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { Histogram, type SideColors, sideColors } from './charts.tsx';
import { useServedRuns, useSteps } from './servedRuns.ts';
import { runLabel, shownRunId } from '../../runs.ts';
import { runParamNote, stepParamNote } from '../../urlNotes.ts';
import { groupHref, sampleDiffHref, sampleHref, type SideRun } from './links.ts';
import { diffRuns, diffSteps } from './sides.ts';

/**
 * The samples of a flipped group worth reading side by side: the better side's best against the worse side's
 * worst (a failure against a success, never two failures), said in the link.
 */
function CompareFlip({ a, b, runA, runB, flip }: { a: number; b: number; runA: string | null; runB: string | null; flip: StepDiff['flipped'][number] }) {
  const bBetter = (flip.b.reward_mean ?? 0) >= (flip.a.reward_mean ?? 0);
  const sa = bBetter ? flip.a.worst_sample : flip.a.best_sample;
  const sb = bBetter ? flip.b.best_sample : flip.b.worst_sample;
  if (sa === null || sb === null) return null;
  return (
    <a href={sampleDiffHref(runA, runB, [a, sa], [b, sb])} data-testid="compare-flip" title="the better side's best sample against the worse side's worst">
      compare A's {bBetter ? 'worst' : 'best'} with B's {bBetter ? 'best' : 'worst'}
    </a>
  );
}

export const delta = (d: number | null) => (d === null ? '' : `${d > 0 ? '+' : ''}${fmtNum(d)}`);

type Which = 'a' | 'b';

function SidePicker(props: { which: Which; runs: RunListing[] | null; run: string | null; steps: number[]; step: number | undefined; colors: SideColors; choose: (patch: { run?: string; step?: number }) => void }) {
  const { which, runs, run, steps, step, colors, choose } = props;
  const label = which.toUpperCase();
  return (
    <span class="diff-pick" data-side={which}>
      <span class="swatch" style={{ background: colors[which] }} data-testid={`swatch-${which}`} /> {label}:{' '}
      {runs && (
        <>
          run{' '}
          <select value={run ?? ''} aria-label={`run ${label}`} data-testid={`run-${which}`} onChange={(e) => choose({ run: (e.target as HTMLSelectElement).value })}>
            {runs.map((r) => (
              <option value={r.id}>{runLabel(r)}</option>
            ))}
          </select>{' '}
        </>
      )}
      step{' '}
      <select value={step ?? ''} aria-label={`step ${label}`} data-testid={`step-${which}`} onChange={(e) => choose({ step: Number((e.target as HTMLSelectElement).value) })}>
        {steps.map((s) => (
          <option value={s}>{s}</option>
        ))}
      </select>
    </span>
  );
}

/** Which way is better for a compared metric (others, such as response length or entropy, have no better side). */
const BETTER: Record<string, 'higher' | 'lower'> = { reward: 'higher', truncated: 'lower', mean_abs_lp_diff: 'lower', staleness: 'lower' };

/** A mean's change coloured by whether B is better or worse on it, never by its sign alone. */
function deltaClass(metric: string, d: number | null): string {
  const better = BETTER[metric];
  if (!d || better === undefined) return '';
  return (d > 0) === (better === 'higher') ? 'better' : 'worse';
}

export function StepDiffView({ meta, route }: { meta: Meta; route: Route }) {
  const served = useServedRuns();
  const p = route.params;
  const primary = shownRunId(served);
  const runIds = served?.map((r) => r.id) ?? [];
  const runs = diffRuns(runIds, primary, p.get('run_a'), p.get('run_b'));
  const sa = useSteps(served, runs.a, meta, false);
  const sb = useSteps(served, runs.b, meta, false);
  const ready = sa.steps !== null && sb.steps !== null;
  const steps = ready ? diffSteps(sa.steps!, sb.steps!, runs.a === runs.b, numParam(p, 'a'), numParam(p, 'b')) : { a: undefined, b: undefined };
  const { a, b } = steps;
  const query = { a, b, run_a: runs.a, run_b: runs.b };
  const diff = useApi(a !== undefined && b !== undefined ? JSON.stringify(query) : null, (signal) => getJson<StepDiff>('rlsight/diff/steps', query, signal));

  // Every pick writes the whole choice, so the link reproduces it even after the run grows.
  const choose = (which: Which) => (patch: { run?: string; step?: number }) => {
    const next = { run_a: runs.a, run_b: runs.b, a: a ?? null, b: b ?? null };
    if (patch.run !== undefined) {
      next[which === 'a' ? 'run_a' : 'run_b'] = patch.run;
      // Across runs the picked side takes the other side's step number; back in one run, the defaults (a
      // step the new run lacks falls back to them too).
      next[which] = next.run_a !== next.run_b ? (which === 'a' ? b : a) ?? null : null;
    }
    if (patch.step !== undefined) next[which] = patch.step;
    // the header names side A's run
    setParams({ ...next, run: next.run_a }, false);
  };

  const side = (run: string | null): SideRun => ({ run });
  const [ra, rb] = [side(runs.a), side(runs.b)];
  const name = (run: string | null) => run ?? '';
  const across = runs.a !== runs.b;
  const colors = sideColors(served, runs.a, runs.b);

  const head = (
    <div class="diff-head panel">
      <h2 class="view-title">Step diff</h2>
      <SidePicker which="a" runs={served} run={runs.a} steps={sa.steps ?? []} step={a} colors={colors} choose={choose('a')} />
      <SidePicker which="b" runs={served} run={runs.b} steps={sb.steps ?? []} step={b} colors={colors} choose={choose('b')} />
      <span class="muted">histograms show each side’s share of samples per bin; dashed lines are the means</span>
      {ready &&
        [
          runParamNote('run_a', p.get('run_a'), runIds, runs.a),
          runParamNote('run_b', p.get('run_b'), runIds, runs.b),
          stepParamNote('a', p.get('a'), sa.steps!, a),
          stepParamNote('b', p.get('b'), sb.steps!, b),
        ]
          .filter((n) => n !== null)
          .map((n) => (
            <p class="url-note" role="status" data-testid="url-note">
              {n}
            </p>
          ))}
    </div>
  );
  if (sa.error || sb.error) return <ErrorNote error={sa.error ?? sb.error} />;
  if (!ready) return <Loading what="the runs' steps" />;
  if (a === undefined || b === undefined)
    return (
      <section class="diff">
        {head}
        <Empty>No train steps to compare yet{across ? ` in ${a === undefined ? name(runs.a) : name(runs.b)}` : ''}.</Empty>
      </section>
    );
  const d = diff.data;
  const where = (run: string | null, step: number) => (across ? `${name(run)} step ${step}` : `step ${step}`);
  return (
    <section class="diff">
      {head}
      {diff.error ? (
        <ErrorNote error={diff.error} />
      ) : !d ? (
        <Loading what={`${where(runs.a, a)} and ${where(runs.b, b)}`} />
      ) : (
        <>
          <div class="diff-grid">
            {d.distributions.map((x) => (
              <div class="panel diff-dist" data-metric={x.metric}>
                <h3>
                  {x.label}{' '}
                  <span class="muted">
                    {fmtNum(x.a.mean)} → {fmtNum(x.b.mean)} <b class={deltaClass(x.metric, x.delta_mean)} data-testid="delta">{delta(x.delta_mean)}</b>
                  </span>
                </h3>
                {x.note && (
                  <p class="url-note" role="note" data-testid="delta-note">
                    {x.note.charAt(0).toUpperCase() + x.note.slice(1)}: no change is given.
                  </p>
                )}
                {x.a.n + x.b.n === 0 ? <p class="muted">no values on either side</p> : <Histogram d={x} colors={colors} />}
              </div>
            ))}
          </div>
          <div class="panel">
            <h3>
              Groups that flipped{' '}
              <span class="muted">
                ({d.flipped.length} of {d.groups_matched} groups present on both sides, matched by prompt)
              </span>
            </h3>
            {d.flipped.length === 0 ? (
              <p class="muted">No group present on both sides changed outcome (solved: every reward above 0; failed: none; else mixed).</p>
            ) : (
              <table class="diff-table" data-testid="flipped">
                <thead>
                  <tr>
                    <th>prompt</th>
                    <th>A</th>
                    <th>B</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {d.flipped.map((f) => {
                    const group = (s: SideRun, step: number, g: typeof f.a) => {
                      return (
                        <>
                          <a href={groupHref(s, step, g.group_index)}>group {g.group_index}</a> {g.outcome} ({fmtNum(g.reward_mean)})
                        </>
                      );
                    };
                    return (
                      <tr>
                        <td class="prompt">{f.prompt}</td>
                        <td>{group(ra, a, f.a)}</td>
                        <td>{group(rb, b, f.b)}</td>
                        <td>
                          <CompareFlip a={a} b={b} runA={runs.a} runB={runs.b} flip={f} />
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            )}
          </div>
          <div class="diff-two">
            <div class="panel">
              <h3>Samples that moved most</h3>
              {d.moved.length === 0 && (
                <p class="muted">No prompt appears on both sides, so no sample has a counterpart (pick steps or runs over the same prompts).</p>
              )}
              <table class="diff-table" data-testid="moved" hidden={d.moved.length === 0}>
                <thead>
                  <tr>
                    <th>A sample</th>
                    <th>B sample</th>
                    <th>Δ reward</th>
                    <th>Δ length</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {d.moved.map((m) => (
                    <tr title={m.prompt}>
                      <td>
                        <a href={sampleHref(ra, a, m.a.sample_index)} data-side="a">
                          {m.a.sample_index}
                        </a>
                      </td>
                      <td>
                        <a href={sampleHref(rb, b, m.b.sample_index)} data-side="b">
                          {m.b.sample_index}
                        </a>
                      </td>
                      <td>{delta(m.delta_reward)}</td>
                      <td>{delta(m.delta_length)}</td>
                      <td>
                        <a href={sampleDiffHref(runs.a, runs.b, [a, m.a.sample_index], [b, m.b.sample_index])}>compare</a>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <div class="panel">
              <h3>Metrics side by side</h3>
              <table class="diff-table" data-testid="metrics">
                <thead>
                  <tr>
                    <th>key</th>
                    <th>A</th>
                    <th>B</th>
                    <th>Δ</th>
                  </tr>
                </thead>
                <tbody>
                  {d.metrics.map((m) => (
                    <tr>
                      <td class="key">{m.key}</td>
                      <td>{fmtNum(m.a)}</td>
                      <td>{fmtNum(m.b)}</td>
                      <td>{delta(m.delta)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </div>
        </>
      )}
    </section>
  );
}
