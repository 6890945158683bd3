// Metrics view: category sidebar, global search, a grid of synced charts over step or wall time, EMA smoothing.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { errorText, getColumns, getJson } from '../../api.ts';
import { type EngineSeriesHeader, type EngineSeriesView, engineSeriesOf } from '../../columns.ts';
import { Downloads } from '../../components/downloads.tsx';
import { ErrorNote, Loading, Empty } from '../../components/status.tsx';
import { type KeyAction, useKeys } from '../../keyboard.ts';
import { liveTick } from '../../live.ts';
import { href, numParam, setParams, type Route } from '../../route.ts';
import { useStore } from '../../store.ts';
import { naturalCompare } from '../../format.ts';
import type { Coverage, Meta, MetricSeries as Series, RunListing, StepCoverage, Topology } from '../../../src/wire/index.ts';
import { CoverageNote, leastStepCoverage, useRefine, useStepwiseApi } from '../../components/coverage.tsx';
import { useApi } from '../../useApi.ts';
import { axisOf, buildCatalog, catalogKeys, describe, ENGINE_CATEGORY, mergeCatalogs } from './catalog.ts';
import { ChartPanel, type Marker, type XKind, type XYTable } from './chartPanel.tsx';
import { inXOrder } from './xOrder.ts';
import { seriesColor } from '../../theme.ts';
import { chosenRuns, loadRuns, runColor, runLabel, runList, runPath, shownRunId } from '../../runs.ts';
import { RunPicker } from './runPicker.tsx';
import { type AxisKind, drawnRuns, planX } from './overlay.ts';
import { type ChartAxis, fullXRange, sharedZoomRange, zoomByKey } from './keyZoom.ts';

/** More engines than this: their chips scroll in a box of bounded height, with all/none buttons. */
const MANY_ENGINES = 12;

export function MetricsView({ meta, route }: { meta: Meta; route: Route }) {
  const p = route.params;
  const q = p.get('q') ?? '';
  const xKind: AxisKind = p.get('x') === 'time' ? 'time' : p.get('x') === 'rel' ? 'rel' : 'step';
  const allRuns = useStore(runList);
  useEffect(() => void loadRuns(), []);
  const shownId = shownRunId(allRuns);
  // The runs drawn: the ticked ones and the header's run, always (a run chosen in the header joins the overlay).
  const runs = useMemo(() => drawnRuns(allRuns ?? [], chosenRuns(allRuns ?? [], p.get('runs')), shownId), [allRuns, p.get('runs'), shownId]);
  const tick = useStore(liveTick);
  // Several runs drawn: the key list is every drawn run's keys, so a key only another run logs can be charted too.
  const others = runs.filter((r) => r.id !== shownId);
  const otherIds = others.map((r) => r.id).join(',');
  const otherMetas = useStepwiseApi(
    others.length ? `metas|${otherIds}` : null,
    async (signal) => ({ ids: otherIds, metas: await Promise.all(others.map((r) => getJson<Meta>(runPath(r, 'meta'), {}, signal))) }),
    // asked again as the shown run writes only while one of the others is live too (a finished run's keys stay),
    // and while one names the keys of only some of its steps (a slime run's being read)
    others.some((r) => r.status === 'live') ? tick : 0,
    (d) => leastStepCoverage(d.metas.map((m) => m.coverage)),
  );
  const { catalog, keysOf, stepKeysOf } = useMemo(() => {
    const own = buildCatalog(meta);
    // (an answer for other runs than the ticked ones, until the new one is asked, counts for none)
    const loaded = otherMetas.data?.ids === otherIds ? otherMetas.data.metas : [];
    const theirs = loaded.map(buildCatalog);
    const keysOf = new Map<string, Set<string>>();
    const stepKeysOf = new Map<string, string[]>();
    if (shownId !== null) {
      keysOf.set(shownId, catalogKeys(own));
      stepKeysOf.set(shownId, meta.step_keys);
    }
    loaded.forEach((m, i) => {
      keysOf.set(others[i]!.id, catalogKeys(theirs[i]!));
      stepKeysOf.set(others[i]!.id, m.step_keys);
    });
    return { catalog: mergeCatalogs([own, ...theirs]), keysOf, stepKeysOf };
  }, [meta, otherMetas.data, otherIds]);
  const cat = p.get('cat') ?? catalog.categories[0]?.name ?? '';
  // The keys some ticked run lacks (each such chart names the runs).
  const uneven = useMemo(() => {
    if (runs.length < 2) return 0;
    return [...catalogKeys(catalog)].filter((k) => runs.some((r) => keysOf.get(r.id) && !keysOf.get(r.id)!.has(k))).length;
  }, [catalog, keysOf, runs]);
  const smoothing = Math.min(0.99, Math.max(0, numParam(p, 'smooth') ?? 0));
  const zx = p.get('zx')?.split(',').map(Number);
  const zoom: [number, number] | null = zx && zx.length === 2 && zx.every(Number.isFinite) ? [zx[0]!, zx[1]!] : null;
  const [query, setQuery] = useState(q);
  // Back/Forward change the URL under the box; follow it unless the user is typing there.
  useEffect(() => {
    if (!document.activeElement?.hasAttribute('data-search')) setQuery(q);
  }, [q]);

  const keys = useMemo(() => {
    if (q) {
      const needle = q.toLowerCase();
      return catalog.categories.flatMap((c) => c.keys.filter((k) => k.toLowerCase().includes(needle)).map((k) => ({ key: k, cat: c.name })));
    }
    return (catalog.categories.find((c) => c.name === cat)?.keys ?? []).map((k) => ({ key: k, cat }));
  }, [catalog, cat, q]);

  if (!catalog.categories.length)
    return (
      <Empty>
        No metrics in this run: it has no <code>metrics.jsonl</code> records and no rollout dumps to derive <code>dump/*</code> aggregates from.
      </Empty>
    );

  return (
    <div class="metrics-layout">
      <aside class="panel sidebar">
        <input
          type="search"
          data-search
          placeholder="filter metric keys"
          value={query}
          aria-label="search metrics"
          onInput={(e) => {
            const v = (e.target as HTMLInputElement).value;
            setQuery(v);
            setParams({ q: v, zx: null });
          }}
        />
        <ul class="categories" role="list">
          {catalog.categories.map((c) => (
            <li key={c.name}>
              <a
                href={categoryHref(p, c.name)}
                class={!q && c.name === cat ? 'active' : ''}
                onClick={() => setQuery('')}
              >
                {c.name}
                <span class="count">{c.keys.length}</span>
              </a>
            </li>
          ))}
        </ul>
        {allRuns && allRuns.length > 1 && <RunPicker runs={allRuns} chosen={runs} shown={shownId} />}
        {runs.length > 1 && (
          <p class="hint" data-testid="keys-of-runs">
            {otherMetas.data?.ids !== otherIds && !otherMetas.error
              ? 'listing the other ticked runs’ keys…'
              : otherMetas.error
                ? `only ${shownId}’s keys are listed: ${errorText(otherMetas.error)}`
                : `the keys of all ${runs.length} ticked runs are listed${uneven ? `; ${uneven} of them are not in every run (their charts say which run lacks them)` : ''}`}
          </p>
        )}
        <div class="controls-col">
          <label>
            x axis
            <select
              value={xKind}
              onChange={(e) => {
                const v = (e.target as HTMLSelectElement).value;
                setParams({ x: v === 'time' || v === 'rel' ? v : null, zx: null });
              }}
            >
              <option value="step">step</option>
              {/* A dump-only run has no timestamps to put its steps on. */}
              <option value="time" disabled={!meta.capabilities.has_metrics} title={meta.capabilities.has_metrics ? '' : 'no metrics.jsonl: the dump aggregates carry no wall time'}>
                wall time{meta.capabilities.has_metrics ? '' : ' (n/a: dump-only run, no timestamps)'}
              </option>
              <option value="rel" disabled={!meta.capabilities.has_metrics} title={meta.capabilities.has_metrics ? '' : 'no metrics.jsonl: the dump aggregates carry no wall time'}>
                time since start{meta.capabilities.has_metrics ? '' : ' (n/a)'}
              </option>
            </select>
          </label>
          {engine_note(meta)}
          <label title="exponential moving average; the raw series stays faint behind">
            smoothing <output>{smoothing.toFixed(2)}</output>
            <input
              type="range"
              min={0}
              max={0.99}
              step={0.01}
              value={smoothing}
              aria-label="smoothing"
              onInput={(e) => setParams({ smooth: Number((e.target as HTMLInputElement).value) || null })}
            />
          </label>
          {zoom && (
            <button onClick={() => setParams({ zx: null })} title="double-click a chart does the same">
              reset zoom
            </button>
          )}
          <p class="hint">drag or W/S = zoom (all charts) · A/D = pan · double-click or Esc = reset · hover, or focus a chart and press ←/→ = values · log = log y scale</p>
          <Downloads what="all metrics" path="rlsight/export/metrics" formats={['csv', 'parquet']} />
        </div>
      </aside>
      <div class="chart-area">
        <h2 class="view-title">{q ? `“${q}” — ${keys.length} match${keys.length === 1 ? '' : 'es'}` : cat}</h2>
        {others.length > 0 && otherMetas.data?.ids !== otherIds && !otherMetas.error ? (
          <Loading what="the ticked runs' keys" />
        ) : keys.length === 0 ? (
          <Empty>{q ? 'No metric key contains that text.' : 'No metrics in this category.'}</Empty>
        ) : (
          <MetricGrid meta={meta} keys={keys} xKind={xKind} smoothing={smoothing} zoom={zoom} runs={runs} allRuns={allRuns ?? []} keysOf={keysOf} stepKeysOf={stepKeysOf} />
        )}
      </div>
    </div>
  );
}

interface GridProps {
  meta: Meta;
  keys: { key: string; cat: string }[];
  xKind: AxisKind;
  /** The chosen runs (one series each per chart); empty when the server lists none. */
  runs: readonly RunListing[];
  allRuns: readonly RunListing[];
  smoothing: number;
  zoom: [number, number] | null;
  /** Each run's keys, where known (the shown run's, and the other ticked runs' once their meta is in). */
  keysOf: ReadonlyMap<string, ReadonlySet<string>>;
  /** Each run's step keys, where known (else the shown run's). */
  stepKeysOf: ReadonlyMap<string, string[]>;
}

/** Where one run's answers are asked: its own prefix when the server lists runs, else the reference paths. */
function pathFor(run: RunListing | null, path: string): string {
  return run ? runPath(run, path) : path;
}

function MetricGrid({ meta, keys, xKind, smoothing, zoom, runs, allRuns, keysOf, stepKeysOf }: GridProps) {
  const targets: (RunListing | null)[] = runs.length ? [...runs] : [null];
  const overlay = targets.length > 1;
  const runKey = targets.map((r) => r?.id ?? '').join(',');
  /** Whether `run` lists `key` (a run whose keys are not known yet is asked anyway). */
  const has = (run: RunListing | null, key: string) => run === null || !keysOf.get(run.id) || keysOf.get(run.id)!.has(key);
  const stepKeys = (run: RunListing | null) => (run && stepKeysOf.get(run.id)) || meta.step_keys;
  /** Which runs know their keys: the answers are asked again once another run's keys are in. */
  const keysKnown = targets.map((r) => (r && keysOf.has(r.id) ? 1 : 0)).join('');
  const tick = useStore(liveTick);
  const logged = keys.filter((k) => k.cat !== ENGINE_CATEGORY).map((k) => k.key);
  const engine = keys.filter((k) => k.cat === ENGINE_CATEGORY).map((k) => k.key);
  const [perDp, setPerDp] = useState(false);
  const [hiddenEngines, setHidden] = useState<Set<string>>(new Set());

  // series read while the server still reads the run's steps are partial: asked again until complete
  const loggedData = useStepwiseApi(
    logged.length ? `${logged.join(',')}|${runKey}|${keysKnown}` : null,
    async (signal) => {
      const ofRun = async (run: RunListing | null) => {
        const out: Record<string, Series & { axis: string }> = {};
        // only the keys this run lists, each on this run's step key
        const mine = logged.filter((k) => has(run, k));
        const groups = new Map<string, string[]>();
        for (const k of mine) {
          const ax = axisOf(k, stepKeys(run));
          if (!groups.has(ax)) groups.set(ax, []);
          groups.get(ax)!.push(k);
        }
        const fetchAxis = async (ax: string, ks: string[]) => {
          // series derived from the run's steps (dump/*, a slime run's computed keys) come at once over the steps read so far
          const r = await getJson<Record<string, Series>>(pathFor(run, 'metrics'), { keys: ks.join(','), x: ax, progressive: true }, signal);
          for (const k of ks) if (r[k] && (r[k]!.x.length || !out[k])) out[k] = { ...r[k]!, axis: ax };
        };
        await Promise.all([...groups].map(([ax, ks]) => fetchAxis(ax, ks)));
        // A key logged against another step key than its prefix suggests: try the run's other step keys.
        const missing = mine.filter((k) => !k.startsWith('dump/') && !out[k]?.x.length);
        for (const ax of stepKeys(run)) {
          const ks = missing.filter((k) => out[k]?.axis !== ax && !out[k]?.x.length);
          if (ks.length) await fetchAxis(ax, ks);
        }
        return out;
      };
      return Promise.all(targets.map(ofRun));
    },
    tick,
    (perRun) => leastStepCoverage(perRun.flatMap((r) => Object.values(r).map((s) => s.coverage))),
  );

  // Engine series asked while the server still reads the run's history are partial: asked again as it reads more.
  const engineShown = useRef<Coverage | undefined>(undefined);
  const engineRefine = useRefine(engineShown.current);
  const engineData = useApi(
    engine.length ? `${engine.join(',')}|${perDp}|${runKey}|${keysKnown}` : null,
    async (signal) => {
      const out: Record<string, (EngineSeriesView & { run?: RunListing })[]> = {};
      let partial: Coverage | undefined;
      await Promise.all(
        engine.map(async (k) => {
          const perRun = await Promise.all(
            targets.map(async (run) => {
              if (!has(run, k)) return [];
              // The columnar frame: each series' ts and value are views over the received bytes, drawn as they are.
              const frame = await getColumns<EngineSeriesHeader>(pathFor(run, 'timeline/engine_series'), { metric: k, max_points: 1000, per_dp_rank: perDp }, signal);
              if (frame.header.coverage && (!partial || frame.header.coverage.hours_done < partial.hours_done)) partial = frame.header.coverage;
              const series = engineSeriesOf(frame);
              // Several runs: each series is named after its run too, and drawn in the run's colour.
              return overlay ? series.map((e) => ({ ...e, run: run! })) : series;
            }),
          );
          out[k] = perRun.flat();
        }),
      );
      engineShown.current = partial;
      return out;
    },
    `${tick}|${engineRefine}`,
  );

  const onZoom = (z: [number, number] | null) => setParams({ zx: z ? `${+z[0].toPrecision(10)},${+z[1].toPrecision(10)}` : null });
  // On the step axis the engine charts stay on wall time: their zoom is their own, not the URL's step window.
  const [engineZoom, setEngineZoom] = useState<[number, number] | null>(null);
  useEffect(() => setEngineZoom(null), [xKind]);
  const engineLabels = useMemo(() => {
    const s = new Set<string>();
    for (const list of Object.values(engineData.data ?? {})) for (const e of list) s.add(seriesLabel(e));
    // Natural order (`10.0.0.2` before `10.0.0.10`), as the lanes are: the chips, every chart's series and its legend.
    return [...s].sort(naturalCompare);
  }, [engineData.data]);
  // One colour per engine series, for its lines and its swatch alike: its run's when runs are compared.
  const engineColors = useMemo(() => {
    const out = new Map<string, string>();
    for (const list of Object.values(engineData.data ?? {}))
      for (const e of list) out.set(seriesLabel(e), e.run ? runColor(allRuns, e.run.id) : seriesColor(engineLabels.indexOf(seriesLabel(e)), engineLabels.length));
    return out;
  }, [engineData.data, engineLabels, allRuns]);

  // Each run's clock for "time since start": its start, or its first logged point when history precedes it (a resumed run).
  const origins = useMemo(
    () =>
      targets.map((run, i) => {
        let t = run?.start_ts ?? Infinity;
        for (const s of Object.values(loggedData.data?.[i] ?? {})) if (s.ts.length) t = Math.min(t, s.ts[0]!);
        return Number.isFinite(t) ? t : null;
      }),
    [loggedData.data, runKey],
  );
  const loggedTables = useMemo(() => {
    const out = new Map<string, { tables: XYTable[]; kind: XKind; xLabel: string; note?: string; coverage?: StepCoverage; absent: string[]; leftOut: { run: string; why: string }[]; markers: Marker[] }>();
    for (const k of logged) {
      // the runs with a series of this key, and the x the chart puts them on (a time axis draws only timed series)
      const present = targets.flatMap((run, i) => {
        const s = loggedData.data?.[i]?.[k];
        return s ? [{ run, i, s }] : [];
      });
      if (!present.length) continue;
      const plan = planX(
        xKind,
        k,
        present.map(({ run, s }) => ({ run: run?.id ?? null, axis: s.axis, points: s.y.length, timed: s.ts.length === s.y.length ? s.y.length : 0 })),
      );
      const tables: XYTable[] = [];
      // a value logged as NaN or ±inf is no point on the line: it is marked where it was logged
      const markers: Marker[] = [];
      const coverages: (StepCoverage | undefined)[] = [];
      for (const at of plan.drawn) {
        const { run, i, s } = present[at]!;
        coverages.push(s.coverage);
        // A key logged as text has no line to draw: its points are gaps.
        const y = s.y.map((v) => (typeof v === 'number' ? v : null));
        // Time since start lines runs up: each run's clock starts at its own start.
        const start = origins[i] ?? s.ts[0] ?? 0;
        const x = !plan.onTime ? s.x : xKind === 'rel' ? s.ts.map((t) => t - start) : s.ts;
        // One run alone keeps its colour (the run picker's swatch), not the first series colour.
        const ordered = inXOrder(x, y);
        tables.push({ label: overlay ? runLabel(run!) : k, x: ordered.x, y: ordered.y, color: run ? runColor(allRuns, run.id) : undefined, xLabel: plan.ownAxis[at] });
        for (const [p, value] of s.nonfinite ?? []) markers.push({ x: x[p]!, label: overlay ? `${run!.id}: ${value}` : value });
      }
      const kind: XKind = plan.onTime && xKind === 'time' ? 'time' : 'step';
      const absent = overlay ? targets.filter((run) => !has(run, k)).map((run) => run!.id) : [];
      out.set(k, { tables, kind, xLabel: plan.xLabel, note: plan.note, coverage: kind === 'step' ? leastStepCoverage(coverages) : undefined, absent, leftOut: plan.leftOut, markers });
    }
    return out;
  }, [loggedData.data, xKind, runKey, allRuns, origins, keysOf]);
  // Engine restarts, from the topology: an address that leaves the fleet, and one that joins it later.
  const topology = useApi(engine.length ? 'topology' : null, (signal) => getJson<Topology>('timeline/topology', {}, signal).catch(() => null));
  const restarts = useMemo<Marker[]>(() => {
    const out: Marker[] = [];
    const ws = topology.data?.windows ?? [];
    const seen = new Set(ws[0]?.engines.map((e) => e.addr) ?? []);
    const short = (a: string) => a.replace(/^https?:\/\//, '');
    for (let i = 1; i < ws.length; i++) {
      const now = new Set(ws[i]!.engines.map((e) => e.addr));
      for (const e of ws[i - 1]!.engines) if (!now.has(e.addr)) out.push({ x: ws[i]!.t0, label: `${short(e.addr)} lost`, side: 'before' });
      for (const a of now) if (!seen.has(a)) out.push({ x: ws[i]!.t0, label: `engine up on ${short(a)}`, side: 'after' });
      for (const a of now) seen.add(a);
    }
    return out;
  }, [topology.data]);
  const engineTables = useMemo(() => {
    const out = new Map<string, XYTable[]>();
    const rank = new Map(engineLabels.map((l, i) => [l, i]));
    for (const [k, list] of Object.entries(engineData.data ?? {}))
      out.set(
        k,
        [...list].sort((a, b) => (rank.get(seriesLabel(a)) ?? 0) - (rank.get(seriesLabel(b)) ?? 0)).map((e) => {
          // Time since start: each run's clock from its own start (else its first sample), like the logged keys.
          const start = origins[e.run ? targets.indexOf(e.run) : 0] ?? e.ts[0] ?? 0;
          const x = xKind === 'rel' ? Float64Array.from(e.ts, (t) => t - start) : e.ts;
          // One colour per engine, the legend's, whichever engines are hidden.
          return { label: seriesLabel(e), x, y: e.value, color: engineColors.get(seriesLabel(e)) };
        }),
      );
    return out;
  }, [engineData.data, xKind, engineColors, engineLabels, origins]);

  // Every chart on one x axis spans all of it, so a run shorter than another never narrows a chart.
  const extents = useMemo(() => {
    const out = new Map<string, [number, number]>();
    const add = (label: string, tables: XYTable[]) => {
      for (const t of tables) {
        for (const v of t.x) {
          if (!Number.isFinite(v)) continue;
          const e = out.get(label);
          if (!e) out.set(label, [v, v]);
          else if (v < e[0]) e[0] = v;
          else if (v > e[1]) e[1] = v;
        }
      }
    };
    for (const t of loggedTables.values()) add(t.xLabel, t.tables);
    for (const tables of engineTables.values()) add(engineXLabel(xKind), tables);
    return out;
  }, [loggedTables, engineTables]);

  // W/S zoom and A/D pan every chart on the URL's window, Esc resets (Compute Utilization's keys); a focused chart takes them itself.
  const zoomKeys = (action: KeyAction) => () => {
    const own: ChartAxis[] = [...loggedTables.values()].map((t) => ({ xLabel: t.xLabel, coverage: t.coverage }));
    if (xKind !== 'step' && engine.length) own.push({ xLabel: engineXLabel(xKind) });
    // only engine charts on the step axis: their own wall-time window
    const url = own.length > 0;
    // the charts share one window, as a drag on one chart sets it: its range is that of the axis most of them are on
    // (spanning every axis at once, rollout/step 0-199 beside train/step 0-1599, one W left the rollout charts empty),
    // by the rule a focused chart uses for its own, so S resets to the same span and A/D reach the unread steps
    const full = url ? sharedZoomRange(own, extents) : fullXRange(null, extents.get(engineXLabel(xKind)), []);
    if (!full) return;
    const shown = url ? zoom : engineZoom;
    const next = zoomByKey(action, shown ?? full, full);
    if (url) onZoom(next);
    else setEngineZoom(next);
  };
  // (Esc resets the zoom of every chart, as the key map says.)
  useKeys({ zoomIn: zoomKeys('zoomIn'), zoomOut: zoomKeys('zoomOut'), panLeft: zoomKeys('panLeft'), panRight: zoomKeys('panRight'), reset: () => (setEngineZoom(null), onZoom(null)) });

  // A fleet's worth of engines: their chips scroll in a box of a few rows, with all/none to pick a few.
  const manyEngines = engineLabels.length > MANY_ENGINES;

  return (
    <>
      {engine.length > 0 && (
        <div class="panel engine-legend">
          <strong>Engines</strong>
          <label>
            <input type="checkbox" checked={perDp} onChange={(e) => setPerDp((e.target as HTMLInputElement).checked)} /> split by dp rank
          </label>
          {manyEngines && (
            <span class="engine-bulk" data-testid="engine-bulk">
              <span class="muted">
                {engineLabels.length - engineLabels.filter((l) => hiddenEngines.has(l)).length} of {engineLabels.length} drawn
              </span>
              <button class="icon" disabled={hiddenEngines.size === 0} onClick={() => setHidden(new Set())}>
                all
              </button>
              <button class="icon" disabled={engineLabels.every((l) => hiddenEngines.has(l))} onClick={() => setHidden(new Set(engineLabels))}>
                none
              </button>
            </span>
          )}
          <div class={`engine-chips${manyEngines ? ' many' : ''}`}>
            {engineLabels.map((l) => (
              <label key={l}>
                <input
                  type="checkbox"
                  checked={!hiddenEngines.has(l)}
                  onChange={() => {
                    const n = new Set(hiddenEngines);
                    if (n.has(l)) n.delete(l);
                    else n.add(l);
                    setHidden(n);
                  }}
                />
                <span class="swatch" style={{ background: engineColors.get(l) }} data-engine={l} />
                {l.replace(/^https?:\/\//, '')}
              </label>
            ))}
          </div>
        </div>
      )}
      {loggedData.error ? <ErrorNote error={loggedData.error} /> : null}
      {engineData.error ? <ErrorNote error={engineData.error} /> : null}
      {(loggedData.loading && !loggedData.data) || (engineData.loading && !engineData.data) ? <Loading what="metrics" /> : null}
      {engineData.data && engineShown.current && (
        <p class="hint">
          engine series cover the hours of history read so far <CoverageNote coverage={engineShown.current} />
        </p>
      )}
      <div class="chart-grid">
        {loggedData.data &&
          logged.map((k) => {
            const t = loggedTables.get(k);
            if (!t) return null;
            return (
              <ChartPanel
                key={`${k}|${t.kind}`}
                metric={k}
                description={describe(k)}
                tables={t.tables}
                xKind={t.kind}
                xLabel={t.xLabel}
                smoothing={smoothing}
                zoom={zoom}
                onZoom={onZoom}
                xExtent={extents.get(t.xLabel)}
                axisNote={t.note}
                overlaid={overlay}
                coverage={t.coverage}
                absent={t.absent}
                leftOut={t.leftOut}
                markers={t.markers}
              />
            );
          })}
        {engineData.data &&
          engine.map((k) => {
            const tables = engineTables.get(k) ?? [];
            if (!tables.length)
              return (
                <section class="panel chart-panel" key={k} data-metric={k}>
                  <header>
                    <h3>{k}</h3>
                  </header>
                  <p class="muted chart-empty">no engine series recorded for this metric</p>
                </section>
              );
            return (
              <ChartPanel
                key={`${k}|${perDp}`}
                metric={k}
                description={describe(k)}
                tables={tables}
                xKind={xKind === 'rel' ? 'step' : 'time'}
                xLabel={engineXLabel(xKind)}
                smoothing={smoothing}
                zoom={xKind !== 'step' ? zoom : engineZoom}
                onZoom={xKind !== 'step' ? onZoom : setEngineZoom}
                xExtent={extents.get(engineXLabel(xKind))}
                hidden={hiddenEngines}
                markers={xKind === 'rel' ? [] : restarts}
                axisNote={xKind === 'step' ? 'on wall time: engine series are sampled by the clock, not per step' : undefined}
                overlaid={overlay}
                absent={overlay ? targets.filter((run) => !has(run, k)).map((run) => run!.id) : []}
              />
            );
          })}
      </div>
    </>
  );
}

/** The same screen on another category: search and zoom are dropped, axis and smoothing kept. */
function categoryHref(p: URLSearchParams, cat: string): string {
  const q = new URLSearchParams(p);
  q.delete('q');
  q.delete('zx');
  q.set('cat', cat);
  return href('/', q);
}

function engineXLabel(xKind: AxisKind): string {
  return xKind === 'rel' ? 'time since start (s)' : 'time (UTC)';
}

function seriesLabel(e: EngineSeriesView & { run?: RunListing }): string {
  const own = e.labels?.dp_rank !== undefined ? `${e.addr} dp${e.labels.dp_rank}` : e.addr;
  return e.run ? `${runLabel(e.run)} ${own}` : own;
}

/** Engine (sglang) charts are scraped over wall-clock time whatever the x axis chosen: say so beside the selector. */
function engine_note(meta: Meta) {
  return meta.engine_metric_keys.length ? <p class="hint" style={{ margin: '2px 0 6px' }}>sglang charts always run on wall time (they are scraped, not logged per step)</p> : null;
}

