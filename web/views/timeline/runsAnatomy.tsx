// Step anatomy of two runs side by side (`runs=A,B` beside the chosen run): each step's phase durations as
// stacked bars on one shared time scale, and its wait share, from each run's `perf/*` metrics.
import { useEffect } from 'preact/hooks';
import { getJson } from '../../api.ts';
import { ErrorNote, Loading } from '../../components/status.tsx';
import { fmtDuration, fmtPct } from '../../format.ts';
import { href } from '../../route.ts';
import { loadRuns, runColor, runList, runPath, shownRunId } from '../../runs.ts';
import { useStore } from '../../store.ts';
import { phaseColor } from '../../theme.ts';
import type { MetricSeries, RunListing } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { comparedRun } from '../rollouts/compare.tsx';
import { liveTick } from '../../live.ts';

/** A step's parts, in the order a step runs them; their sum is at most the step time (the rest is other work). */
const PARTS: { key: string; label: string; phase: string }[] = [
  { key: 'perf/rollout_time', label: 'rollout', phase: 'rollout' },
  { key: 'perf/log_probs_time', label: 'log probs', phase: 'log_probs' },
  { key: 'perf/ref_log_probs_time', label: 'ref log probs', phase: 'ref_log_probs' },
  { key: 'perf/actor_train_time', label: 'actor train', phase: 'actor_train' },
  { key: 'perf/update_weights_time', label: 'update weights', phase: 'update_weights' },
];
const STEP = 'perf/step_time';
const WAIT = 'perf/wait_time_ratio';
/** Steps shown per run (the newest). */
const STEPS_SHOWN = 12;

type Answer = Record<string, MetricSeries>;

interface StepParts {
  step: number;
  total: number | null;
  wait: number | null;
  parts: (number | null)[];
}

function anatomy(a: Answer): StepParts[] {
  const steps = [...new Set([...(a[STEP]?.x ?? []), ...PARTS.flatMap((p) => a[p.key]?.x ?? [])])].sort((x, y) => x - y).slice(-STEPS_SHOWN);
  const at = (k: string, s: number) => {
    const series = a[k];
    const i = series ? series.x.indexOf(s) : -1;
    const v = i >= 0 ? series!.y[i] : null;
    return typeof v === 'number' ? v : null;
  };
  return steps.map((s) => ({ step: s, total: at(STEP, s), wait: at(WAIT, s), parts: PARTS.map((p) => at(p.key, s)) }));
}

export function RunsAnatomy({ params }: { params: URLSearchParams }) {
  const all = useStore(runList);
  useEffect(() => void loadRuns(), []);
  const other = comparedRun(all, params.get('runs'));
  const shown = shownRunId(all);
  const runs: RunListing[] = other && all ? [all.find((r) => r.id === shown)!, other].filter(Boolean) : [];
  const keys = [STEP, WAIT, ...PARTS.map((p) => p.key)].join(',');
  // asked again as a followed run writes (the last answer stays on screen meanwhile)
  const tick = useStore(liveTick);
  const res = useApi(
    runs.length === 2 ? runs.map((r) => r.id).join(',') : null,
    (signal) => Promise.all(runs.map((r) => getJson<Answer>(runPath(r, 'metrics'), { keys, x: 'rollout/step' }, signal))),
    tick,
  );
  if (!all || all.length < 2 || !shown) return null;
  if (runs.length !== 2) {
    const next = all.find((r) => r.id !== shown)!;
    return (
      <p class="hint">
        <a href={href('/timeline', { runs: `${shown},${next.id}` })} data-testid="anatomy-compare">
          compare the step anatomy with {next.id}
        </a>
      </p>
    );
  }
  if (res.error) return <ErrorNote error={res.error} />;
  if (!res.data) return <Loading what="step anatomy of both runs" />;
  const sides = res.data.map(anatomy);
  const scale = Math.max(1e-9, ...sides.flat().map((s) => s.total ?? s.parts.reduce<number>((a, b) => a + (b ?? 0), 0)));
  return (
    <section class="panel runs-anatomy" data-testid="runs-anatomy">
      <header>
        <h3>
          Step anatomy: {runs[0]!.id} and {runs[1]!.id} (newest {STEPS_SHOWN} steps, one time scale){' '}
          <a href={href('/timeline', { runs: null })} class="hint">
            close
          </a>
        </h3>
      </header>
      <div class="anatomy-legend">
        {PARTS.map((p) => (
          <span>
            <i class="swatch" style={{ background: phaseColor(p.phase) }} /> {p.label}
          </span>
        ))}
        <span>
          <i class="swatch other" /> other (step time − parts)
        </span>
      </div>
      <div class="anatomy-sides">
        {runs.map((r, i) => (
          <div class="anatomy-side" data-run={r.id}>
            <h4>
              <span class="swatch" style={{ background: runColor(all, r.id) }} /> {r.id}
            </h4>
            {sides[i]!.length === 0 ? (
              <p class="hint">no perf/* step times in this run</p>
            ) : (
              sides[i]!.map((s) => {
                const known = s.parts.reduce<number>((a, b) => a + (b ?? 0), 0);
                const other = s.total !== null ? Math.max(0, s.total - known) : 0;
                return (
                  <div class="anatomy-step" data-step={s.step} title={[`step ${s.step}: ${s.total === null ? '—' : fmtDuration(s.total)}`, ...PARTS.map((p, k) => `${p.label}: ${s.parts[k] === null ? '—' : fmtDuration(s.parts[k]!)}`), `wait share: ${fmtPct(s.wait)}`].join('\n')}>
                    <span class="anatomy-label">{s.step}</span>
                    <span class="anatomy-bar">
                      {s.parts.map((v, k) => (v ? <span style={{ width: `${(100 * v) / scale}%`, background: phaseColor(PARTS[k]!.phase) }} /> : null))}
                      {other > 0 && <span class="other" style={{ width: `${(100 * other) / scale}%` }} />}
                    </span>
                    <span class="anatomy-total" data-testid="step-time">
                      {s.total === null ? '—' : fmtDuration(s.total)}
                    </span>
                    <span class="anatomy-wait" data-testid="wait-share" title="wait share (perf/wait_time_ratio)">
                      {s.wait === null ? '' : `wait ${fmtPct(s.wait, 0)}`}
                    </span>
                  </div>
                );
              })
            )}
          </div>
        ))}
      </div>
    </section>
  );
}
