// Compute Utilization: per-GPU lanes (≤ 64) or the fleet overview, lane grammar, quick picks, advisory — all in the URL.
import { useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, apiUrl, getColumns, getJson, getRaster } from '../../api.ts';
import { type EngineSeriesHeader, type EngineSeriesView, engineSeriesOf, gpuLanes, type LanePhases, type PhasesHeader, phaseLanes } from '../../columns.ts';
import { Empty, ErrorNote, Loading } from '../../components/status.tsx';
import { fmtDuration, fmtElapsed, fmtWall, laneKey } from '../../format.ts';
import { useKeys } from '../../keyboard.ts';
import { liveTick } from '../../live.ts';
import { href, navigate, numParam, setParams, type Route } from '../../route.ts';
import { useStore } from '../../store.ts';
import type { Bubble, Coverage, Fleet, GpuSeries, HeatmapHeader, Lane, LanesAnswer, Meta, Outlier, Topology } from '../../../src/wire/index.ts';
import { CoverageNote, useRefine } from '../../components/coverage.tsx';
import { useApi } from '../../useApi.ts';
import { RunsAnatomy } from './runsAnatomy.tsx';
import { RunHoldings, useRunFacts } from '../../components/runHoldings.tsx';
import { noTimelineText } from '../../runFacts.ts';
import { windowParamNote } from '../../urlNotes.ts';
import { AdvisoryPanel } from './advisoryPanel.tsx';
import { FleetPanel } from './fleetPanel.tsx';
import { LaneCanvas } from './laneCanvas.tsx';
import type { LaneInfo, Overlay } from './layers/laneRow.ts';
import { REQUEST_STRIP_ROWS } from './layers/lifecycleStrip.ts';
import { LaneSelection, type QuickPick } from './laneSelection.tsx';
import { fmtScore, scoreTexts } from './scores.ts';
import { Legend } from './legend.tsx';
import { unplacedEngines, windowsIn } from './layers/engineOverlay.ts';
import { StickyAxis } from './stickyAxis.tsx';
import { clampViewport, pan, zoomAround, type Viewport } from './viewport.ts';

export const OVERLAY_METRICS = ['sglang_num_running_reqs', 'sglang_gen_throughput', 'sglang_token_usage', 'sglang_cache_hit_rate'];
const LANE_VIEW_MAX = 64;
const DEFAULT_FLEET_LANES = 8;
/** Late starters added to the default lane sample of a large cluster, so the worst outliers are on screen. */
const DEFAULT_LATE_LANES = 2;
const GPU_POINTS = 2000;
const LIFECYCLE_BUCKETS = 1200;
const FLEET_BUCKETS = 600;

export function TimelineView({ meta, route }: { meta: Meta; route: Route }) {
  const facts = useRunFacts(meta);
  if (!meta.capabilities.has_timeline || !meta.time_range) {
    // The run's format is in the run list (`formats`); until the list is loaded, a run with traces that no collector
    // recorded is a slime run.
    const slime = facts.format === 'slime' || (facts.format === null && facts.traces && !facts.collector);
    return slime ? (
      <Empty>
        <strong>No timeline for this run.</strong> It is a slime run, and slime writes no compute timeline: there is no phase or GPU
        telemetry to draw.
        <br />
        <a href={href('/')}>Metrics</a> has slime's own <code>perf/</code>, <code>rollout/</code>, <code>eval/</code> and{' '}
        <code>perf_fixed/</code> keys (and the <code>dump/*</code> aggregates); <a href={href('/trace')}>Trace</a> draws each step's
        request traces, and <a href={href('/rollout')}>Rollouts</a> and samples work as usual.
      </Empty>
    ) : (
      <Empty>
        <strong>No timeline for this run.</strong> {noTimelineText(facts)}
        <br />
        <RunHoldings facts={facts} here="timeline" />
      </Empty>
    );
  }
  return <Timeline meta={meta} route={route} range={meta.time_range} />;
}

function Timeline({ meta, route, range }: { meta: Meta; route: Route; range: [number, number] }) {
  const tick = useStore(liveTick);
  const p = route.params;
  const [T0, T1] = range;
  const maxW = meta.capabilities.max_window_s || 14400;
  const urlT0 = numParam(p, 't0');
  const urlT1 = numParam(p, 't1');
  const zoomed = urlT0 !== null && urlT1 !== null;
  // By default the current attempt (a resumed run's metrics reach further back than its telemetry), at most the widest window.
  const attemptStart = meta.start_ts != null && meta.start_ts > T0 ? meta.start_ts : null;
  // The newest stretch the server can read at once (narrower than the widest window on a dense fleet).
  const openW = Math.min(maxW, meta.default_window_s ?? maxW);
  const defaultVp = { t0: Math.max(T1 - openW, attemptStart ?? -Infinity), t1: T1 };
  const resetLabel = attemptStart !== null && attemptStart >= T1 - openW ? 'this attempt' : T1 - T0 > openW ? 'latest window' : 'whole run';
  const vp = clampViewport(zoomed ? { t0: urlT0, t1: urlT1 } : defaultVp, T0, Math.max(T1, T0 + 1), maxW);
  const windowNote = windowParamNote(p.get('t0'), p.get('t1'), T0, Math.max(T1, T0 + 1), vp);
  const grammarParam = p.get('lanes');
  const overlayParam = p.get('overlay');
  const overlayMetric = overlayParam === 'none' ? null : overlayParam ?? (meta.engine_metric_keys.includes(OVERLAY_METRICS[0]!) ? OVERLAY_METRICS[0]! : null);
  const showMem = p.get('mem') === '1';

  // Each zoom, pan and reset is a history entry (Back returns to the previous window); only the
  // continuous wheel zoom replaces the current one.
  const setVp = (v: Viewport | null, replace = false) => {
    if (!v) return setParams({ t0: null, t1: null }, replace);
    const c = clampViewport(v, T0, Math.max(T1, T0 + 1), maxW);
    const full = c.t0 <= T0 + 1e-6 && c.t1 >= T1 - 1e-6;
    setParams(full ? { t0: null, t1: null } : { t0: +c.t0.toFixed(3), t1: +c.t1.toFixed(3) }, replace);
  };
  useKeys({
    zoomIn: () => setVp(zoomAround(vp, 0.7, (vp.t0 + vp.t1) / 2)),
    zoomOut: () => setVp(zoomAround(vp, 1 / 0.7, (vp.t0 + vp.t1) / 2)),
    panLeft: () => setVp(pan(vp, -0.2)),
    panRight: () => setVp(pan(vp, 0.2)),
    reset: () => setVp(null),
  });

  const base = useApi(
    'base',
    async (signal) => {
      const [topology, lanes, bubbles, late] = await Promise.all([
        getJson<Topology>('timeline/topology', {}, signal),
        // Every lane with its ranks and roles, joined by the server, for the labels.
        getJson<LanesAnswer>('rlsight/lanes', { lanes: 'all' }, signal).then((r) => r.lanes),
        getJson<{ bubbles: Bubble[] }>('timeline/bubbles', {}, signal).then((b) => b.bubbles),
        getJson<{ outliers: Outlier[] }>('timeline/outliers', { criterion: 'start_lag', top_k: DEFAULT_LATE_LANES }, signal)
          .then((r) => r.outliers.filter((o) => o.straggler === true))
          .catch(() => [] as Outlier[]),
      ]);
      return { topology, lanes, bubbles, late };
    },
    tick,
  );
  const topology = base.data?.topology ?? null;
  const allLanes = base.data?.lanes ?? [];
  const fleetMode = meta.capabilities.use_utilization_overview || allLanes.length > LANE_VIEW_MAX;
  const late = base.data?.late ?? [];
  const defaultGrammar = useMemo(() => {
    if (!fleetMode || allLanes.length <= DEFAULT_FLEET_LANES) return null;
    const n = allLanes.length;
    const spaced = Array.from({ length: DEFAULT_FLEET_LANES }, (_, i) => allLanes[Math.floor((i * n) / DEFAULT_FLEET_LANES)]!.index);
    // Evenly spaced lanes alone would miss a straggler; the worst late starters join them.
    const indexOf = new Map(allLanes.map((l) => [laneKey(l.node, l.gpu), l.index]));
    const lateIdx = late.map((o) => indexOf.get(laneKey(o.node, o.gpu))).filter((i): i is number => i !== undefined && !spaced.includes(i));
    return [...spaced, ...lateIdx].map((i) => `g:${i}`).join(', ');
  }, [fleetMode, allLanes, late]);
  const [pick, setPick] = useState<QuickPick | null>(null);
  const grammar = grammarParam ?? defaultGrammar;
  // A quick pick holds while the selection is the one it wrote: its lanes stay worst first, scored.
  const activePick = pick && grammarParam === pick.grammar ? pick : null;
  const apiLanes = grammar && grammar.trim() !== 'all' ? grammar : undefined;

  const winKey = `${vp.t0},${vp.t1}`;
  const lanesData = useApi(
    base.data ? `${winKey}|${apiLanes ?? ''}` : null,
    async (signal) => {
      const q = { t0: vp.t0, t1: vp.t1, lanes: apiLanes };
      const [ph, gpu, selected] = await Promise.all([
        getColumns<PhasesHeader>('timeline/phases', q, signal).then(phaseLanes),
        getColumns<{ lanes: string[] }>('timeline/gpu', { ...q, max_points: GPU_POINTS }, signal).then((f) => ({ lanes: gpuLanes(f) })),
        // Phases and GPU series leave out lanes without data; the selection itself names every lane it picks.
        apiLanes ? getJson<{ lanes: Lane[] }>('rlsight/lanes', { lanes: apiLanes }, signal).then((r) => r.lanes) : null,
      ]);
      return { phases: ph, gpu: gpu.lanes, selected, grammar: apiLanes };
    },
    tick,
    true,
  );
  const urlError = lanesData.error instanceof ApiError && lanesData.error.status === 400 && grammarParam ? lanesData.error : null;

  // Whole-window answers read while the server still reads the history are partial (`coverage`): each asks
  // again when more hours are read (the answer on screen stays meanwhile, without a spinner).
  const overlayShown = useRef<Coverage | undefined>(undefined);
  const overlayRefine = useRefine(overlayShown.current);
  const overlayData = useApi(
    overlayMetric ? `${overlayMetric}|${winKey}` : null,
    (signal) =>
      getColumns<EngineSeriesHeader>('timeline/engine_series', { metric: overlayMetric!, t0: vp.t0, t1: vp.t1, max_points: GPU_POINTS }, signal).then((f) => ({
        series: engineSeriesOf(f),
        coverage: f.header.coverage,
      })),
    `${tick}|${overlayRefine}`,
    true,
  );
  overlayShown.current = overlayData.data?.coverage;
  const lifecycle = useApi(
    winKey,
    (signal) => getRaster<HeatmapHeader>('timeline/heatmap', { metric: 'lifecycle', t0: vp.t0, t1: vp.t1, x_buckets: LIFECYCLE_BUCKETS, max_rows: REQUEST_STRIP_ROWS }, signal).catch(() => null),
    tick,
    true,
  );
  const fleetShown = useRef<Coverage | undefined>(undefined);
  const fleetRefine = useRefine(fleetShown.current);
  const fleet = useApi(
    fleetMode ? winKey : null,
    (signal) => getJson<Fleet>('timeline/fleet', { t0: vp.t0, t1: vp.t1, x_buckets: FLEET_BUCKETS }, signal),
    `${tick}|${fleetRefine}`,
    true,
  );
  fleetShown.current = fleet.data?.coverage;

  const view = useMemo(() => {
    const phasesByLane = lanesData.data?.phases.byLane ?? new Map<string, LanePhases>();
    const names = lanesData.data?.phases.names ?? [];
    const gpu = lanesData.data?.gpu ?? {};
    // The lanes the answer on screen was asked for: while a new selection loads, the old answer stays whole.
    const shownGrammar = lanesData.data ? lanesData.data.grammar : apiLanes;
    let lanes: LaneInfo[];
    const byKey = new Map(allLanes.map((l) => [laneKey(l.node, l.gpu), l]));
    if (!shownGrammar) lanes = allLanes.map((l) => ({ ...l, key: laneKey(l.node, l.gpu) }));
    else {
      const keys = new Set([...(lanesData.data?.selected ?? []).map((l) => laneKey(l.node, l.gpu)), ...Object.keys(gpu), ...phasesByLane.keys()]);
      lanes = [...keys]
        .map((k) => {
          const l = byKey.get(k);
          const i = k.lastIndexOf(':');
          return l ? { ...l, key: k } : { key: k, node: k.slice(0, i), gpu: Number(k.slice(i + 1)), index: -1, ranks: [], roles: [] };
        })
        .sort((a, b) => a.index - b.index);
    }
    if (activePick) {
      const rank = new Map(activePick.outliers.map((o, i) => [laneKey(o.node, o.gpu), i]));
      // the lane labels read as the pick's summary does (as many decimals as tell its scores apart)
      const texts = scoreTexts(activePick.outliers.map((o) => o.score), activePick.unit);
      const score = new Map(activePick.outliers.map((o, i) => [laneKey(o.node, o.gpu), texts[i]!]));
      lanes = lanes
        .map((l) => ({ ...l, score: score.get(l.key) }))
        .sort((a, b) => (rank.get(a.key) ?? 1e9) - (rank.get(b.key) ?? 1e9) || a.index - b.index);
    } else if (!shownGrammar || !grammarParam) {
      // The default sample marks its late starters.
      const lateKeys = new Set(late.map((o) => laneKey(o.node, o.gpu)));
      const score = new Map(late.map((o) => [laneKey(o.node, o.gpu), `straggler, median lag ${fmtScore(o.score, 's')}`]));
      if (lateKeys.size) lanes = lanes.map((l) => (lateKeys.has(l.key) ? { ...l, score: score.get(l.key) } : l));
    }
    let memMax = 0;
    for (const g of Object.values(gpu)) for (let i = 0; i < g.mem_mb.length; i++) if (g.mem_mb[i] > memMax) memMax = g.mem_mb[i];
    return { phasesByLane, names, gpu, lanes, memMax };
  }, [lanesData.data, allLanes, apiLanes, activePick, late, grammarParam]);

  const overlay = useMemo<Overlay | null>(() => {
    if (!overlayMetric || !overlayData.data) return null;
    const byAddr = new Map<string, EngineSeriesView>();
    let max = 0;
    for (const s of overlayData.data.series) {
      if (!byAddr.has(s.addr)) byAddr.set(s.addr, s);
      for (const v of s.value) if (v != null && v > max) max = v;
    }
    return { metric: overlayMetric, byAddr, max: max || 1 };
  }, [overlayData.data, overlayMetric]);

  // Overlay series of engines that no lane of the run shows (no topology, or their GPUs or host on no lane). They
  // depend on the view only through the topology windows it overlaps, so a wheel or drag frame that keeps the same
  // windows (nearly all of them) does not go over every window's engines again.
  const inView = windowsIn(topology, vp.t0, vp.t1).join(',');
  const unplaced = useMemo(() => {
    if (!overlay) return [];
    const lanes = new Map([...allLanes, ...view.lanes].map((l) => [laneKey(l.node, l.gpu), l]));
    return unplacedEngines(topology, [...lanes.values()], overlay.byAddr.keys(), vp.t0, vp.t1);
  }, [overlay, topology, allLanes, view.lanes, inView]);

  const shown = view.lanes.slice(0, LANE_VIEW_MAX);
  const multiNode = new Set(allLanes.map((l) => l.node)).size > 1;
  const lc = lifecycle.data && lifecycle.data.header.rows.length ? lifecycle.data : null;
  const span = vp.t1 - vp.t0;

  return (
    <div class="timeline-layout">
      <div class="timeline-main">
        <div class="timeline-sticky">
        <div class="toolbar">
          <label>
            overlay
            <select
              data-testid="overlay"
              value={overlayMetric ?? 'none'}
              onChange={(e) => setParams({ overlay: (e.target as HTMLSelectElement).value }, false)}
            >
              <option value="none">none</option>
              {OVERLAY_METRICS.map((m) => (
                <option key={m} value={m} disabled={!meta.engine_metric_keys.includes(m)}>
                  {m.replace(/^sglang_/, '')}
                  {meta.engine_metric_keys.includes(m) ? '' : ' (not recorded)'}
                </option>
              ))}
            </select>
          </label>
          <label>
            <input type="checkbox" checked={showMem} onChange={(e) => setParams({ mem: (e.target as HTMLInputElement).checked }, false)} /> memory
          </label>
          <span class="seg">
            <button title="zoom in (W)" aria-label="zoom in" onClick={() => setVp(zoomAround(vp, 0.7, (vp.t0 + vp.t1) / 2))}>
              +
            </button>
            <button title="zoom out (S)" aria-label="zoom out" onClick={() => setVp(zoomAround(vp, 1 / 0.7, (vp.t0 + vp.t1) / 2))}>
              −
            </button>
            <button title="whole run (Esc)" disabled={!zoomed} onClick={() => setVp(null)}>
              {resetLabel}
            </button>
          </span>
          {windowNote && (
            <span class="url-note" role="status" data-testid="url-note">
              {windowNote}
            </span>
          )}
          <span class="muted" data-testid="window" style={{ fontSize: '12.5px' }}>
            {fmtElapsed(vp.t0 - T0)} → {fmtElapsed(vp.t1 - T0)} ({fmtDuration(span)}) · {fmtWall(vp.t0).slice(0, 19)} UTC
          </span>
          {(lanesData.loading || (overlayData.loading && !overlayData.data?.coverage)) && <span class="spinner" title="loading" />}
          {overlayMetric && <CoverageNote coverage={overlayData.data?.coverage} />}
          <a
            href={apiUrl('rlsight/export/perfetto', { t0: vp.t0.toFixed(3), t1: vp.t1.toFixed(3), lanes: apiLanes })}
            download
            data-testid="perfetto-download"
            title="this window's selected lanes and engine series as Chrome trace-event JSON (open at ui.perfetto.dev)"
            style={{ marginLeft: 'auto', fontSize: '12.5px' }}
          >
            Perfetto ↓
          </a>
        </div>
        <LaneSelection
          grammar={grammarParam}
          defaultGrammar={defaultGrammar}
          pending={grammarParam === null && !base.data && !base.error}
          urlError={urlError}
          vp={vp}
          lanes={allLanes}
          phaseNames={view.names.filter((n) => n !== 'initialize')}
          onChange={(g, replace) => setParams({ lanes: g }, !!replace)}
          pick={activePick}
          onPick={setPick}
          lateCount={late.length}
        />
        <StickyAxis range={[T0, Math.max(T1, T0 + 1)]} vp={vp} bubbles={base.data?.bubbles ?? []} origin={T0} onViewport={setVp} />
        </div>
        {fleetMode && (fleet.data ? <FleetPanel fleet={fleet.data} origin={T0} onViewport={setVp} /> : fleet.error ? <ErrorNote error={fleet.error} /> : <Loading what="fleet overview" />)}
        <section class="panel" style={{ marginTop: '10px' }}>
          {base.error ? (
            <ErrorNote error={base.error} />
          ) : lanesData.error && !urlError ? (
            <ErrorNote error={lanesData.error} />
          ) : !lanesData.data ? (
            urlError ? <Empty>Fix or reset the lane selection above to see lanes.</Empty> : <Loading what="lanes" />
          ) : shown.length === 0 ? (
            <Empty>No lane of this run matches this selection.</Empty>
          ) : (
            <>
              {view.lanes.length > shown.length && (
                <p class="hint" style={{ marginTop: 0 }}>
                  {view.lanes.length} lanes selected; showing the first {LANE_VIEW_MAX}. Narrow the selection (e.g. <code>every:16</code>) to see others.
                </p>
              )}
              <LaneCanvas
                lanes={shown}
                phasesByLane={view.phasesByLane}
                gpu={view.gpu}
                overlay={overlay}
                topology={topology}
                showMem={showMem}
                memMax={view.memMax}
                lifecycle={lc}
                bubbles={base.data?.bubbles ?? []}
                origin={T0}
                vp={vp}
                multiNode={multiNode}
                stepIds={meta.rollout_ids.train}
                onViewport={setVp}
                onReset={() => setVp(null)}
                header={false}
              />
              <Legend phases={view.names} overlay={overlay?.metric ?? null} overlayMax={overlay?.max ?? 0} unplaced={unplaced} memMaxMb={view.memMax} showMem={showMem} lifecycle={!!lc} />
              <p class="hint">drag = zoom to a range · ctrl+wheel = zoom · W/S zoom · A/D pan · Esc or double-click = {resetLabel} · click a step = zoom to it · click a lane’s phase band = that step’s Rollouts</p>
            </>
          )}
        </section>
        <RunsAnatomy params={p} />
      </div>
      <aside class="timeline-side">
        <AdvisoryPanel window={zoomed ? vp : null} origin={T0} params={p} tick={tick} />
        <section class="panel">
          <header>
            <h3>Run</h3>
          </header>
          <p class="muted" style={{ margin: 0, fontSize: '12.5px' }} data-testid="run-facts">
            {/* the lane catalog is not known until it arrives: say nothing about GPUs rather than "0 GPUs" */}
            {base.data ? `${allLanes.length} GPU${allLanes.length === 1 ? '' : 's'} on ${new Set(allLanes.map((l) => l.node)).size} node(s) · ` : ''}
            {fmtDuration(T1 - T0)} of data
            {meta.data_buffer_length != null ? ` · data buffer: ${meta.data_buffer_length} groups` : ''}
          </p>
          <p class="hint">
            <a href={href('/timeline', {})} onClick={(e) => (e.preventDefault(), navigate(href('/timeline', {})))}>
              reset this view
            </a>
          </p>
        </section>
      </aside>
    </div>
  );
}
