// The shell: top navigation (ordinary links), run badge, live status, and the current view under its one h1.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { stillWriting } from './api.ts';
import { ErrorNote, Loading } from './components/status.tsx';
import { Tooltip } from './components/tooltip.tsx';
import { fmtDuration, fmtWall } from './format.ts';
import { WarmUpBar, warmUpProgress } from './components/warmUpBar.tsx';
import { liveConnected, meta, metaDescribes, metaError, refreshMeta, startLive } from './live.ts';
import { href, useRoute } from './route.ts';
import { RunSelector, unknownRunText } from './components/runSelector.tsx';
import { loadRuns, runList, shownRunId } from './runs.ts';
import { useStore } from './store.ts';
import { RunsView } from './views/runs/index.tsx';
import { DiffView } from './views/diff/index.tsx';
import { HealthView } from './views/health/index.tsx';
import { HeaderSearch } from './views/search/headerSearch.tsx';
import { MetricsView } from './views/metrics/index.tsx';
import { RolloutsView } from './views/rollouts/index.tsx';
import { SampleView } from './views/sample/index.tsx';
import { TimelineView } from './views/timeline/index.tsx';
import { TraceView } from './views/trace/index.tsx';
import { runsParamNote } from './urlNotes.ts';
import { focusViewHeading, takeHeadingAsked, VIEW_NAMES, viewHeading } from './viewHeading.ts';
import { letterKeys, setLetterKeys } from './keyboard.ts';

export function App() {
  const stored = useStore(meta);
  const err = useStore(metaError);
  const r = useRoute();
  // the run just chosen is drawn once its own meta is in (the previous run's steps and capabilities are not its)
  const m = stored !== null && metaDescribes(r.params.get('run') || null) ? stored : null;
  const writing = useStore(stillWriting);
  const connected = useStore(liveConnected);
  const runs = useStore(runList);
  // the clock the live badge is judged by (a followed run that stops writing sends nothing to redraw on); a run
  // not followed has no badge to judge, and the app is not redrawn for it
  const [now, setNow] = useState(() => Date.now() / 1000);
  const followed = m?.mode === 'follow';
  useEffect(() => {
    if (!followed) return;
    setNow(Date.now() / 1000);
    const t = setInterval(() => setNow(Date.now() / 1000), 30_000);
    return () => clearInterval(t);
  }, [followed]);
  const quiet = m ? quietFor(m.time_range, m.live_edge_s, now) : null;
  const runId = r.params.get('run') || null;
  const unknownRun = runId !== null && runs !== null && runs.length > 0 && !runs.some((x) => x.id === runId);
  const runsNote = runs !== null && runs.length > 0 ? runsParamNote(r.params.get('runs'), runs.map((x) => x.id)) : null;

  // the run list and meta are asked as the app first renders, not after its first paint: every view waits for them
  useLayoutEffect(() => void loadRuns(), []);
  useLayoutEffect(() => {
    // Another run's warm-up is not this one's: its progress is polled afresh.
    warmUpProgress.set(null);
    void refreshMeta();
  }, [runId]);
  useEffect(() => {
    if (m?.mode === 'follow') startLive();
  }, [m?.mode, runId]);
  useEffect(() => {
    document.title = `${VIEW_NAMES[r.view]} · ${runId ?? m?.run_name ?? 'rlsight'}`;
  }, [r.view, m?.run_name, runId]);
  // Another view (not another step or parameter of this one) is said aloud and focus moves to its heading, so
  // keyboard and screen-reader users start there rather than in the header they left.
  const heading = viewHeading(r);
  const [announced, setAnnounced] = useState('');
  const shownView = useRef(r.view);
  useEffect(() => {
    if (shownView.current === r.view) return;
    shownView.current = r.view;
    setAnnounced(heading);
    focusViewHeading();
  }, [r.view]);
  // A search result opened (maybe in the view shown, another sample): once its route has rendered, focus is on the
  // heading that names it, and that is said.
  useEffect(() => {
    if (!takeHeadingAsked()) return;
    setAnnounced(heading);
    focusViewHeading();
  }, [r]);
  const shownRun = shownRunId(runs);

  const latest = m?.rollout_ids.train.at(-1) ?? m?.rollout_ids.eval.at(-1);
  const latestEval = !m?.rollout_ids.train.length && !!m?.rollout_ids.eval.length;
  const stepId = r.rolloutId ?? latest;
  const evalQ = r.params.get('eval') === '1' || (r.rolloutId === null && latestEval);
  const sampleHref =
    r.view === 'sample' ? `${location.hash}` : stepId !== undefined ? href(`/rollout/${stepId}/sample`, { eval: evalQ }) : undefined;

  return (
    <>
      <header class="topbar">
        <a
          class="skip-link"
          href="#view"
          // `#view` would be read as a route: the link moves focus to the view's heading itself.
          onClick={(e) => {
            e.preventDefault();
            focusViewHeading();
          }}
        >
          Skip to content
        </a>
        <a class="brand" href={href('/')}>
          rl<span>sight</span>
        </a>
        <nav aria-label="views">
          <a href={href('/')} class={r.view === 'metrics' ? 'active' : ''} aria-current={r.view === 'metrics' ? 'page' : undefined}>
            Metrics
          </a>
          <a href={href('/timeline')} class={r.view === 'timeline' ? 'active' : ''} aria-current={r.view === 'timeline' ? 'page' : undefined} title="Compute Utilization">
            Compute<span class="narrow-hide"> Utilization</span>
          </a>
          <a href={stepId !== undefined ? href(`/trace/${stepId}`, { eval: evalQ }) : href('/trace')} class={r.view === 'trace' ? 'active' : ''} aria-current={r.view === 'trace' ? 'page' : undefined}>
            Trace
          </a>
          <a
            href={stepId !== undefined ? href(`/rollout/${stepId}`, { eval: evalQ }) : href('/rollout')}
            class={r.view === 'rollout' ? 'active' : ''}
            aria-current={r.view === 'rollout' ? 'page' : undefined}
          >
            Rollouts
          </a>
          <a href={sampleHref ?? href('/rollout')} class={r.view === 'sample' ? 'active' : ''} aria-current={r.view === 'sample' ? 'page' : undefined}>
            Sample
          </a>
          <a href={href('/health')} class={r.view === 'health' ? 'active' : ''} aria-current={r.view === 'health' ? 'page' : undefined}>
            Health
          </a>
          <a href={href('/diff')} class={r.view === 'diff' || r.view === 'sample-diff' ? 'active' : ''} aria-current={r.view === 'diff' || r.view === 'sample-diff' ? 'page' : undefined}>
            Diff
          </a>
          <a href={href('/runs')} class={r.view === 'runs' ? 'active' : ''} aria-current={r.view === 'runs' ? 'page' : undefined}>
            Runs
          </a>
        </nav>
        <HeaderSearch />
        <div class="runinfo">
          {writing.length > 0 && (
            <span class="writing" role="status" title="the server answered 503: a dump file is still being written">
              dump still being written — retrying…
            </span>
          )}
          {runs && runs.length > 1 && shownRun !== null && <RunSelector runs={runs} chosen={shownRun} />}
          {m && (
            <>
              {!(runs && runs.length > 1) && (
                <span class="run-name" title="run name">
                  {m.run_name ?? 'unnamed run'}
                </span>
              )}
              {m.mode === 'follow' && m.recorder === 'stopped' ? (
                <span class="badge static" data-testid="finished-badge" title="followed, and its collector has stopped: nothing more will be written (a new collector on the run brings it back live)">
                  ◼ finished
                </span>
              ) : m.mode === 'follow' && quiet !== null ? (
                <span class="badge static" data-testid="quiet-badge" title={`followed, but nothing new has been written for ${fmtDuration(quiet)}: the job may have finished (its updates show as they come)`}>
                  ◼ no new data
                </span>
              ) : m.mode === 'follow' ? (
                <span
                  class={`badge ${connected ? 'live' : 'stale'}`}
                  title={connected ? 'following a running job: updates arrive as they are written' : 'reconnecting to the live stream…'}
                >
                  ● live
                </span>
              ) : (
                <span class="badge static" title="a finished run: nothing changes">
                  ◼ static
                </span>
              )}
              <WarmUpBar key={runId ?? ''} initial={m.warmup} />
              {m.time_range && (
                <span class="edge" title="newest data written by the run">
                  data → {fmtWall(m.time_range[1])}
                </span>
              )}
              {m.wandb_url && /^https?:\/\//i.test(m.wandb_url) && (
                // The server sends only http(s) links; checked here too, as a link from run metadata runs in this origin.
                <a href={m.wandb_url} target="_blank" rel="noreferrer">
                  wandb ↗
                </a>
              )}
            </>
          )}
        </div>
      </header>
      {m?.warnings && m.warnings.length > 0 && <DamageBanner warnings={m.warnings} />}
      <p class="sr-only" role="status" data-testid="view-announce">
        {announced}
      </p>
      <main id="view" key={runId ?? ''}>
        <h1 id="view-heading" class="sr-only" tabIndex={-1}>
          {heading}
        </h1>
        {runsNote && (
          <p class="url-note" role="status" data-testid="url-note">
            {runsNote}
          </p>
        )}
        {unknownRun ? (
          <div class="error-note" role="alert">
            <strong>Unknown run.</strong> {unknownRunText(runId, runs)}
          </div>
        ) : r.view === 'runs' ? (
          <RunsView route={r} />
        ) : err && !m ? (
          <ErrorNote error={err}>
            <button onClick={() => void refreshMeta()}>retry</button>
          </ErrorNote>
        ) : !m ? (
          <Loading what="run" />
        ) : r.view === 'timeline' ? (
          <TimelineView meta={m} route={r} />
        ) : r.view === 'rollout' ? (
          <RolloutsView meta={m} route={r} />
        ) : r.view === 'diff' || r.view === 'sample-diff' ? (
          <DiffView meta={m} route={r} />
        ) : r.view === 'health' ? (
          <HealthView meta={m} />
        ) : r.view === 'sample' ? (
          <SampleView meta={m} route={r} />
        ) : r.view === 'trace' ? (
          <TraceView meta={m} route={r} />
        ) : (
          <>
            {r.invalid && (
              <p class="url-note" role="alert" data-testid="unknown-view">
                The address names no view: {r.invalid}. Showing Metrics; the views are in the bar above.
              </p>
            )}
            <MetricsView meta={m} route={r} />
          </>
        )}
      </main>
      <KeysNote />
      <Tooltip />
    </>
  );
}

/** The keys help, and the switch that turns the single-letter keys off (kept in this browser). */
function KeysNote() {
  const on = useStore(letterKeys);
  return (
    <footer class="keys-note">
      Keys: <kbd>/</kbd> search · <kbd>j</kbd>/<kbd>k</kbd> next/previous · <kbd>w</kbd>/<kbd>s</kbd> zoom, <kbd>a</kbd>/<kbd>d</kbd> pan · <kbd>Esc</kbd> reset.{' '}
      <label>
        <input type="checkbox" checked={on} data-testid="letter-keys" onChange={(e) => setLetterKeys((e.currentTarget as HTMLInputElement).checked)} /> single-letter keys (j k w a s d)
      </label>
    </footer>
  );
}

/** What the server found damaged and skipped: the rest of the run is still shown. */
function DamageBanner({ warnings }: { warnings: string[] }) {
  return (
    <details class="damage-banner" aria-live="polite">
      <summary>
        ⚠ {warnings.length} problem{warnings.length === 1 ? '' : 's'} reading this run: damaged files are skipped, the rest is shown
      </summary>
      <ul>
        {warnings.map((w) => (
          <li key={w}>
            <code>{w}</code>
          </li>
        ))}
      </ul>
    </details>
  );
}

/** Seconds since a followed run last wrote, when that is longer than the server says a live run goes quiet; null otherwise. */
function quietFor(range: [number, number] | null, liveEdgeS: number | undefined, now: number): number | null {
  if (range === null || liveEdgeS === undefined) return null;
  const quiet = now - range[1];
  return quiet > liveEdgeS ? quiet : null;
}
