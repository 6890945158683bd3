// Health board: one row per train step, one column per failure signal, each cell coloured by its threshold and
// linking to the view with the evidence. The server computes every value; this view only lays them out.
import { getJson } from '../../api.ts';
import { Empty, ErrorNote, Loading } from '../../components/status.tsx';
import { SideScroll } from '../../components/sideScroll.tsx';
import { liveTick } from '../../live.ts';
import { useStore } from '../../store.ts';
import type { HealthAnswer, HealthCell, HealthLevel, HealthRow, Meta, SignalSpec, StepCoverage } from '../../../src/wire/index.ts';
import { useEffect } from 'preact/hooks';
import { href, numParam, route, setParams } from '../../route.ts';
import { loadRuns, runColor, runList, runPath, shownRunId } from '../../runs.ts';
import { evidenceHref } from './evidence.ts';
import { markPainted } from '../../paintMarks.ts';
import { CoverageNote, leastStepCoverage, useStepwiseApi } from '../../components/coverage.tsx';
import { RunHoldings, useRunFacts } from '../../components/runHoldings.tsx';
import { dumped, noDumpsText } from '../../runFacts.ts';

function cellText(c: HealthCell): string {
  if (c.value === null) return '–';
  const v = c.value;
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 10 ? v.toFixed(1) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3);
}

/** One column head per signal, with what it watches in its title. */
function SignalHeads({ signals }: { signals: readonly SignalSpec[] }) {
  return (
    <>
      {signals.map((s) => (
        <th scope="col" title={signalTitle(s)} data-signal={s.id}>
          {s.label}
        </th>
      ))}
    </>
  );
}

function signalTitle(s: SignalSpec): string {
  return `${s.doc}\nwarn above ${s.warn}, fires above ${s.fire}`;
}

/** How a cell's level is said to a screen reader. */
const LEVEL_WORDS: Record<HealthLevel, string> = { ok: 'ok', warn: 'warn', fire: 'fired', none: 'no data' };
/** The glyph a warned or fired cell shows besides its colour, for who cannot tell the colours apart. */
const LEVEL_MARKS: Partial<Record<HealthLevel, string>> = { warn: '!', fire: '▲' };

/**
 * A cell's value with its level and what was measured: the colour and glyph for the eye, the same in words
 * (visually hidden) for a screen reader, so the link focus lands on says which signal fired and why.
 */
function CellBody({ signal, cell, link }: { signal: SignalSpec; cell: HealthCell; link: string | null }) {
  const mark = LEVEL_MARKS[cell.level];
  const body = (
    <>
      {mark && (
        <span class="hc-mark" aria-hidden="true">
          {mark}
        </span>
      )}
      {cellText(cell)}
      <span class="sr-only">
        , {signal.label} {LEVEL_WORDS[cell.level]}: {cell.detail}
      </span>
    </>
  );
  return link ? <a href={link}>{body}</a> : <span>{body}</span>;
}

/** A cell whose evidence opens from anywhere inside it (the link fills the cell). */
function HealthTd({ signal, cell }: { signal: SignalSpec; cell: HealthCell }) {
  return (
    <td class={`hc ${cell.level}`} data-signal={signal.id} title={`${signal.label}: ${cell.detail}`}>
      <CellBody signal={signal} cell={cell} link={cell.evidence ? evidenceHref(cell.evidence) : null} />
    </td>
  );
}

/**
 * Runs × signals (`runs=ID,ID` or `runs=all` on a server holding several runs): each run's cells at its newest
 * step, or at `at=STEP`. A run's evidence links open that run.
 */
function RunsBoard({ signals, tick }: { signals: SignalSpec[]; tick: number }) {
  const all = useStore(runList);
  useEffect(() => void loadRuns(), []);
  const r = useStore(route);
  const param = r.params.get('runs');
  const wanted = (param ?? '').split(',').filter(Boolean);
  const runs = (all ?? []).filter((x) => wanted.includes(x.id) || param === 'all');
  const asked = numParam(r.params, 'at');
  const at = asked !== null && Number.isInteger(asked) ? asked : null;
  const key = runs.length > 1 ? runs.map((x) => x.id).join(',') : null;
  // boards over the steps read so far are asked again until every run's steps are read
  const boards = useStepwiseApi(
    key,
    (signal) => Promise.all(runs.map((x) => getJson<HealthAnswer>(runPath(x, 'rlsight/health'), {}, signal))),
    tick,
    (answers) => leastStepCoverage(answers.map((b) => b.coverage)),
  );
  if (!key && all && all.length > 1)
    return (
      <p class="hint">
        <a href={href('/health', { runs: 'all' })} data-testid="health-compare">
          Compare the {all.length} runs signal by signal
        </a>
      </p>
    );
  if (!key || !all) return null;
  const shown = shownRunId(all);
  return (
    <div class="health-runs" data-testid="health-runs">
      <h2 class="view-title">
        Runs × signals at {at === null ? 'each run’s newest step' : `step ${at}`} <CoverageNote coverage={leastStepCoverage((boards.data ?? []).map((b) => b.coverage))} />{' '}
        <label class="hint">
          step{' '}
          <input
            type="number"
            min={0}
            value={at ?? ''}
            placeholder="newest"
            aria-label="step of the runs board"
            onChange={(e) => setParams({ at: (e.currentTarget as HTMLInputElement).value || null })}
          />
        </label>
      </h2>
      {atNote(r.params.get('at'), at, boards.data) && (
        <p class="url-note" role="status" data-testid="url-note">
          {atNote(r.params.get('at'), at, boards.data)}
        </p>
      )}
      {boards.error ? (
        <ErrorNote error={boards.error} />
      ) : !boards.data ? (
        <Loading what="health of each run" />
      ) : (
        <SideScroll class="health-scroll">
          <table class="health-board runs-board">
            <thead>
              <tr>
                <th scope="col">run</th>
                <th scope="col">step</th>
                <SignalHeads signals={signals} />
              </tr>
            </thead>
            <tbody>
              {runs.map((x, i) => {
                const rows = boards.data![i]!.rows;
                const row = at === null ? rows.at(-1) : rows.find((q) => q.step === at);
                // a run with no train step dumped (a metrics-only run) has no cells to show: one line says why
                const none = rows.length === 0 && !boards.data![i]!.coverage;
                return (
                  <tr data-run={x.id} class={x.id === shown ? 'shown' : ''}>
                    <th scope="row">
                      <span class="swatch" style={{ background: runColor(all, x.id) }} />
                      <a href={href('/health', { run: x.id, runs: r.params.get('runs'), at })}>{x.id}</a>
                    </th>
                    <td>{row ? row.step : '—'}</td>
                    {none ? (
                      <td class="none" colSpan={signals.length} data-testid="runs-board-none" style={{ textAlign: 'left', color: 'var(--muted)' }}>
                        no train steps dumped{x.status === 'live' || x.status === 'quiet' ? ' yet' : ''}: the health board reads rollout dumps (
                        <a href={href('/', { run: x.id })}>its metrics</a>)
                      </td>
                    ) : (
                      signals.map((s) =>
                      row?.cells[s.id] ? (
                        <RunHealthTd run={x.id} signal={s} cell={row.cells[s.id]} />
                      ) : (
                        <td class="hc none" data-signal={s.id} title={at === null ? 'no train step yet' : `step ${at} is not recorded in ${x.id}`}>
                          –
                        </td>
                      ),
                      )
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </SideScroll>
      )}
    </div>
  );
}

/** The runs board's `at=` that is no step number, or a step none of the runs recorded: say so, never a silent board. */
function atNote(raw: string | null, at: number | null, boards: readonly HealthAnswer[] | null | undefined): string | null {
  if (raw === null || raw === '') return null;
  if (at === null) return `at=“${raw}” is not a step number: showing each run’s newest step.`;
  if (boards && !boards.some((b) => b.rows.some((row) => row.step === at))) return `at=${at} is a step none of these runs recorded (their health steps end at ${boards.map((b) => b.rows.at(-1)?.step ?? '—').join(', ')}).`;
  return null;
}

/** A runs-board cell: its evidence opens in the run it belongs to. */
function RunHealthTd({ run, signal, cell }: { run: string; signal: SignalSpec; cell: HealthCell }) {
  return (
    <td class={`hc ${cell.level}`} data-signal={signal.id} title={`${run} · ${signal.label}: ${cell.detail}`}>
      <CellBody signal={signal} cell={cell} link={cell.evidence ? withRun(evidenceHref(cell.evidence), run) : null} />
    </td>
  );
}

/** `link` with `run=` set to `run`. */
function withRun(link: string, run: string): string {
  const i = link.indexOf('?');
  const q = new URLSearchParams(i >= 0 ? link.slice(i + 1) : '');
  q.set('run', run);
  return `${i >= 0 ? link.slice(0, i) : link}?${q}`;
}

/** The board's rows in step order, with each run of steps not read yet (a partial board) as one line. */
function boardLines(rows: readonly HealthRow[], coverage: StepCoverage | undefined): (HealthRow | { unread: [number, number] })[] {
  const out: (HealthRow | { unread: [number, number] })[] = [];
  const unread = coverage?.unread ?? [];
  let u = 0;
  for (const r of rows) {
    while (u < unread.length && unread[u]![0] < r.step) out.push({ unread: unread[u++]! });
    out.push(r);
  }
  while (u < unread.length) out.push({ unread: unread[u++]! });
  return out;
}

export function HealthView({ meta }: { meta: Meta }) {
  const tick = useStore(liveTick);
  const facts = useRunFacts(meta);
  const all = useStore(runList);
  // a board over the steps read so far is asked again, without a reload, until every step is read
  const board = useStepwiseApi('health', (signal) => getJson<HealthAnswer>('rlsight/health', {}, signal), tick, (b) => b.coverage);
  useEffect(() => {
    if (board.data) markPainted('health');
  }, [board.data]);
  if (board.error) return <ErrorNote error={board.error} />;
  if (!board.data) return <Loading what="health board" />;
  const { signals, rows, fired, warnings } = board.data;
  if (rows.length === 0 && !board.data.coverage) {
    // the board's rows are the run's dumped train steps
    if (!dumped(facts))
      return (
        <section class="health">
          <RunsBoard signals={signals} tick={tick} />
          <Empty>
            {noDumpsText(facts, 'The health board')}
            <br />
            <RunHoldings facts={facts} here="health" />
          </Empty>
        </section>
      );
    return (
      <Empty>
        No train steps in this run{facts.mayGrow ? ' yet' : ''}: the health board reads train steps’ rollout dumps, and it holds{' '}
        {facts.trainSteps === 0 ? `only eval steps (${facts.evalSteps})` : 'none it could read'}.
      </Empty>
    );
  }
  const partial = board.data.coverage;
  return (
    <section class="health">
      <RunsBoard signals={signals} tick={tick} />
      <h2 class="view-title">
        Health{(all?.length ?? 0) > 1 ? ` of ${shownRunId(all)}` : ''} — {rows.length} step{rows.length === 1 ? '' : 's'}{partial ? ` read of ${partial.steps_total}` : ''},{' '}
        {fired.length === 0 ? `no signal fired${partial ? ' so far' : ''}` : `${fired.length} signal${fired.length === 1 ? '' : 's'} fired`} <CoverageNote coverage={partial} />
      </h2>
      {warnings.length > 0 && (
        <p class="health-warnings" role="status">
          {warnings.join(' · ')}
        </p>
      )}
      <SideScroll class="health-scroll">
        <table class="health-board">
          <thead>
            <tr>
              <th scope="col">step</th>
              <SignalHeads signals={signals} />
            </tr>
          </thead>
          <tbody>
            {boardLines(rows, partial).map((r) =>
              'unread' in r ? (
                <tr class="unread" data-testid="unread-steps">
                  <th scope="row">{r.unread[0] === r.unread[1] ? r.unread[0] : `${r.unread[0]}–${r.unread[1]}`}</th>
                  <td colSpan={signals.length}>not yet read{rows.length === 0 ? ': rows appear as the server reads the steps, newest first' : ''}</td>
                </tr>
              ) : (
              <tr class={r.damaged ? 'damaged' : undefined} data-damaged={r.damaged}>
                <th scope="row" title={r.damaged ? `damaged: ${r.damaged}` : undefined}>
                  <a href={href(`/rollout/${r.step}`)}>{r.step}</a>
                  {r.damaged && <span class="health-damaged"> damaged</span>}
                </th>
                {signals.map((s) => {
                  const c = r.cells[s.id];
                  return (
                    <HealthTd signal={s} cell={c} />
                  );
                })}
              </tr>
              ),
            )}
          </tbody>
        </table>
      </SideScroll>
      <p class="health-legend">
        <span class="hc ok">ok</span>{' '}
        <span class="hc warn">
          <span class="hc-mark" aria-hidden="true">
            !
          </span>
          warn
        </span>{' '}
        <span class="hc fire">
          <span class="hc-mark" aria-hidden="true">
            ▲
          </span>
          fired
        </span>{' '}
        <span class="hc none">no data</span> — hover a
        column for its threshold, a cell for what was measured; click a cell for the evidence. Thresholds: <code>--health-config FILE</code>.
      </p>
    </section>
  );
}
