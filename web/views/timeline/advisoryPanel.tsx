// Advisory and MFU: what the run's configuration left on the table, each item linked to the window it concerns.
import { getJson } from '../../api.ts';
import { ErrorNote, Loading } from '../../components/status.tsx';
import { fmtElapsed, fmtPct } from '../../format.ts';
import { href } from '../../route.ts';
import { useRef } from 'preact/hooks';
import type { Coverage, LocatedAdvisory as Advisory, LocatedAdvisoryAnswer } from '../../../src/wire/index.ts';
import { CoverageNote, useRefine } from '../../components/coverage.tsx';
import { useApi } from '../../useApi.ts';
import type { Viewport } from './viewport.ts';

interface Props {
  window: Viewport | null;
  origin: number;
  params: URLSearchParams;
  tick: number;
}

/** A window shown on its own: an instant is widened to a minute, so the timeline has something to draw. */
const MIN_LINK_SPAN_S = 60;
/** Longer lane selections are counted in the label (the link still carries them whole). */
const MAX_LANES_LABEL = 48;

export function AdvisoryPanel({ window: w, origin, params, tick }: Props) {
  const key = w ? `${w.t0},${w.t1}` : 'run';
  const shown = useRef<Coverage | undefined>(undefined);
  const refine = useRefine(shown.current);
  const res = useApi(
    key,
    (signal) => getJson<LocatedAdvisoryAnswer>('rlsight/advisory', w ? { t0: w.t0, t1: w.t1 } : {}, signal),
    `${tick}|${refine}`,
  );
  shown.current = res.data?.coverage;
  const linkFor = (a: Advisory) => {
    const p = new URLSearchParams(params);
    let win: [number, number] | null = null;
    if (a.window) {
      const pad = Math.max(0, MIN_LINK_SPAN_S - (a.window.t1 - a.window.t0)) / 2;
      // Millisecond precision, as the timeline writes its own window.
      win = [+(a.window.t0 - pad).toFixed(3), +(a.window.t1 + pad).toFixed(3)];
      p.set('t0', String(win[0]));
      p.set('t1', String(win[1]));
    } else if (w) {
      p.set('t0', String(w.t0));
      p.set('t1', String(w.t1));
    } else {
      p.delete('t0');
      p.delete('t1');
    }
    // An advisory about the whole fleet keeps the lanes the user chose.
    if (a.lanes) p.set('lanes', a.lanes);
    const where = win ? `${fmtElapsed(win[0] - origin)} → ${fmtElapsed(win[1] - origin)}` : w ? 'this window' : 'whole run';
    const lanes = a.lanes && a.lanes.length > MAX_LANES_LABEL ? `${a.lanes.split(',').length} lane terms` : a.lanes;
    return { href: href('/timeline', p), label: lanes ? `${where} · ${lanes}` : where, title: a.lanes ?? 'every lane' };
  };
  return (
    <>
      {res.data?.mfu && (
        <section class="panel" data-testid="mfu">
          <header>
            <h3>Model FLOPs utilisation</h3>
          </header>
          <div class="stats" style={{ gridTemplateColumns: '1fr 1fr', margin: 0 }}>
            <div class="stat">
              <div class="v">{fmtPct(res.data.mfu.latest)}</div>
              <div class="k">latest step</div>
            </div>
            <div class="stat">
              <div class="v">{fmtPct(res.data.mfu.mean)}</div>
              <div class="k">mean over {res.data.mfu.steps} step{res.data.mfu.steps === 1 ? '' : 's'}</div>
            </div>
          </div>
          {res.data.mfu.peak != null && <p class="hint">device peak {res.data.mfu.peak} TFLOP/s (dense bf16)</p>}
        </section>
      )}
      <section class="panel" data-testid="advisory">
        <header>
          <h3>Advisory</h3>
          {/* a window scopes the engine and tuning rules only; stalls, stragglers and the step's verdicts read the whole run */}
          <span class="muted" style={{ fontSize: '11.5px' }} title="stalled phases, stragglers and the newest step's rules always read the whole run; each item links to the span it concerns">
            {w ? 'engine and tuning: this window · the rest: whole run' : 'whole run'}
          </span>
          <CoverageNote coverage={res.data?.coverage} />
        </header>
        {res.error ? (
          <ErrorNote error={res.error} />
        ) : !res.data ? (
          <Loading what="advisory" />
        ) : res.data.advisories.length === 0 ? (
          <p class="muted" style={{ margin: 0, fontSize: '12.5px' }}>
            {res.data.coverage?.hours_done === 0
              ? `Nothing to suggest yet: no hour of ${w ? 'this window' : "the run's history"} has been read yet.`
              : `Nothing to suggest${res.data.coverage ? ' yet' : ''}: no rule fired${w ? ' in this window' : ''}${res.data.coverage ? ' in the hours read so far' : ''}.`}{' '}
            Rules compare engine series and step timings against the run's configuration.
          </p>
        ) : (
          <ul class="advisory">
            {res.data.advisories.map((a, i) => {
              const l = linkFor(a);
              return (
                <li key={i} class={a.level}>
                  <span class="lvl">{a.level}</span>
                  {a.message}{' '}
                  <a href={l.href} data-testid="advisory-link" title={`show the time window this advisory is about (lanes: ${l.title})`}>
                    ↦ {l.label}
                  </a>
                </li>
              );
            })}
          </ul>
        )}
      </section>
    </>
  );
}
