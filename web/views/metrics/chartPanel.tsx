// One metric chart: raw series faint behind its smoothed line, synced cursor and zoom, values at the cursor, CSV export.
import uPlot from 'uplot';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { UPlotChart } from '../../components/uplotChart.tsx';
import { store, useStore } from '../../store.ts';
import { markPainted } from '../../paintMarks.ts';
import { GAP_FACTOR } from '../timeline/layers/utilLine.ts';
import { fmtNum } from '../../format.ts';
import { fmtTicks } from '../../ticks.ts';
import { alpha, CSS, SERIES_COLORS } from '../../theme.ts';
import { downloadText, toCsv } from './csv.ts';
import { unitOf } from './catalog.ts';
import { ema } from './smoothing.ts';
import { CoverageNote } from '../../components/coverage.tsx';
import { drawUnread } from '../../components/unread.ts';
import type { StepCoverage } from '../../../src/wire/index.ts';
import { yRange } from './yRange.ts';
import { seriesSummary } from '../../components/chartText.ts';
import { fullXRange, zoomByKey } from './keyZoom.ts';
import { keyAction, letterKeys } from '../../keyboard.ts';

export interface XYTable {
  label: string;
  /** Plain arrays (a JSON answer) or views over a columnar frame, drawn as they are. */
  x: number[] | Float64Array;
  /** A null, or a frame's non-finite value (NaN for a JSON null), is a gap. */
  y: (number | null)[] | Float64Array;
  /** A colour of its own (a run's); else the next series colour. */
  color?: string;
  /** The step key its x is on, when the chart's series are on different ones (said in its summary and CSV). */
  xLabel?: string;
}

export type XKind = 'step' | 'time';

/** A moment marked on the chart (an engine restart), drawn as a dashed vertical line. */
export interface Marker {
  x: number;
  label: string;
  /** Which side of the line the label goes (an end before, a start after). */
  side?: 'before' | 'after';
}

interface Props {
  metric: string;
  description: string;
  tables: XYTable[];
  xKind: XKind;
  xLabel: string;
  smoothing: number;
  /** The zoom window a user chose (shared by every chart on this axis), or null for the full range. */
  zoom: [number, number] | null;
  /** Called on a user's drag (a window) or double-click (null); never for an automatic range. */
  onZoom: (z: [number, number] | null) => void;
  /** The x span of every chart on this axis: the full range covers it, so all runs' steps show in every chart. */
  xExtent?: [number, number] | null;
  hidden?: Set<string>;
  markers?: Marker[];
  /** Why this chart does not follow the x-axis choice (shown under its title). */
  axisNote?: string;
  /** Several runs overlaid: lines are drawn see-through so an identical history shows both. */
  overlaid?: boolean;
  /** A `dump/*` series over the steps read so far: the steps not read yet are hatched, the axis spans them too. */
  coverage?: StepCoverage;
  /** The compared runs that do not list this key (their ids): said above the chart. */
  absent?: readonly string[];
  /** The compared runs not drawn on this time axis, each with why (their points carry no time): said above the chart. */
  leftOut?: readonly { run: string; why: string }[];
}

/** A partial series' unread steps as x spans (a step is a unit wide), hatched over the plot area. */
function drawUnreadSteps(u: uPlot, coverage: StepCoverage | undefined): void {
  const { min, max } = u.scales.x;
  if (!coverage || min == null || max == null) return;
  const { left, top, width, height } = u.bbox;
  drawUnread(u.ctx, { unread: coverage.unread.map(([a, b]) => [a - 0.5, b + 0.5]) }, min, max, left, top, width, height);
}

/** The chart a drag started in: synced charts see the drag too, only this one turns it into a zoom. */
let dragFrom: uPlot | null = null;

/** Dash patterns told apart without colour: solid, long, short, dotted. */
const DASHES: (number[] | undefined)[] = [undefined, [8, 4], [3, 3], [1, 3]];

const STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000, 100000];

function axis(kind: 'x' | 'y', xKind: XKind, unit: { unit: string; scale: number } | null = null): uPlot.Axis {
  const a: uPlot.Axis = {
    stroke: CSS.axis,
    grid: { stroke: CSS.grid, width: 1 },
    ticks: { stroke: CSS.grid, width: 1, size: 4 },
    font: '11px system-ui, sans-serif',
  };
  if (kind === 'y') {
    a.size = unit ? 62 : 56;
    a.values = (_u, splits) => fmtTicks(splits.map((v) => v * (unit?.scale ?? 1)), fmtTick);
    if (unit) {
      a.label = unit.unit;
      a.labelSize = 14;
      a.labelFont = '11px system-ui, sans-serif';
    }
  } else if (xKind === 'step') {
    a.incrs = STEP_INCRS;
    a.values = (_u, splits) => splits.map((v) => String(v));
  }
  return a;
}

/** A time axis' value (epoch seconds) as the UTC time of day, in the cursor's readout and the chart's summary alike. */
const timeOfDay = (v: number): string => new Date(v * 1000).toISOString().slice(11, 19);

function fmtTick(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(1);
  if (a >= 100) return v.toFixed(0);
  if (a >= 1) return String(+v.toFixed(2));
  return String(+v.toFixed(4));
}

/**
 * Breaks a time series' line where consecutive points are far further apart than usual (a missed
 * scrape, an engine restart), instead of bridging the gap; alignment nulls between engines stay spanned.
 */
function breakLongGaps(u: uPlot, seriesIdx: number, idx0: number, idx1: number, gaps: uPlot.Series.Gaps): uPlot.Series.Gaps {
  const xs = u.data[0];
  const ys = u.data[seriesIdx]!;
  const at: number[] = [];
  for (let i = idx0; i <= idx1; i++) if (ys[i] != null) at.push(i);
  if (at.length < 3) return gaps;
  const dx = at.slice(1).map((k, j) => xs[k]! - xs[at[j]!]!).sort((a, b) => a - b);
  const typical = dx[dx.length >> 1]!;
  let broken = 0;
  const apart = (j: number) => xs[at[j]!]! - xs[at[j - 1]!]! > GAP_FACTOR * typical;
  for (let j = 1; j < at.length; j++) {
    if (apart(j)) {
      uPlot.addGap(gaps, Math.round(u.valToPos(xs[at[j - 1]!]!, 'x', true)) + 1, Math.round(u.valToPos(xs[at[j]!]!, 'x', true)));
      broken++;
    }
  }
  // A sample alone between two silences draws no line: it is drawn as a dot instead (see isolatedPoints).
  const alone: number[] = [];
  for (let j = 0; j < at.length; j++) if ((j === 0 || apart(j)) && (j === at.length - 1 || apart(j + 1))) alone.push(at[j]!);
  let perSeries = isolated.get(u);
  if (!perSeries) isolated.set(u, (perSeries = new Map()));
  perSeries.set(seriesIdx, alone);
  // How many gaps of the record each series leaves open (for a reader, and a test, to check).
  const counts = JSON.parse(u.root.getAttribute('data-record-gaps') ?? '{}') as Record<string, number>;
  counts[String(u.series[seriesIdx]?.label ?? seriesIdx)] = broken;
  u.root.setAttribute('data-record-gaps', JSON.stringify(counts));
  return gaps;
}
/** Per chart and series, the samples with a silence on both sides (found while breaking the line). */
const isolated = new WeakMap<uPlot, Map<number, number[]>>();

/** Points drawn on a time chart: all of them when shown, else the isolated ones, which no line segment shows. */
function isolatedPoints(u: uPlot, seriesIdx: number, show: boolean): number[] | null {
  if (show) return null;
  const idxs = isolated.get(u)?.get(seriesIdx);
  return idxs && idxs.length ? idxs : null;
}

/** Dashed vertical lines at each marker; their labels sit above the plot (never over a curve), in rows that do not overlap. */
function drawMarkers(u: uPlot, markers: readonly Marker[]): void {
  if (!markers.length) return;
  const { ctx } = u;
  const { left, top, width, height } = u.bbox;
  const dpr = devicePixelRatio;
  ctx.save();
  ctx.strokeStyle = MARKER_COLOR;
  ctx.fillStyle = MARKER_COLOR;
  ctx.setLineDash([5, 4]);
  ctx.lineWidth = 1.5 * dpr;
  ctx.font = `${10.5 * dpr}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  const rows: [number, number][][] = [];
  const boxes: number[][] = [];
  for (const m of markers) {
    const x = Math.round(u.valToPos(m.x, 'x', true));
    if (x < left || x > left + width) continue;
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    const w = ctx.measureText(m.label).width;
    const before = m.side === 'before';
    // Kept inside the canvas: a label that would run off an edge goes to the line's other side.
    let x0 = before ? x - 4 * dpr - w : x + 4 * dpr;
    if (x0 < 0) x0 = x + 4 * dpr;
    if (x0 + w > u.ctx.canvas.width) x0 = x - 4 * dpr - w;
    let row = rows.findIndex((r) => r.every(([a, b]) => x0 + w < a || x0 > b));
    if (row < 0 || row >= MARKER_ROWS) row = row < 0 ? Math.min(rows.length, MARKER_ROWS - 1) : row;
    (rows[row] ??= []).push([x0, x0 + w]);
    const y = top - (MARKER_ROWS - row) * MARKER_ROW_PX * dpr;
    ctx.textAlign = 'left';
    ctx.fillText(m.label, x0, y);
    boxes.push([x0 / dpr, y / dpr, (x0 + w) / dpr, y / dpr + MARKER_ROW_PX - 2]);
  }
  ctx.restore();
  u.root.setAttribute('data-marker-boxes', JSON.stringify({ plotTop: top / dpr, boxes }));
}
/** Label rows above the plot, and their height in CSS pixels (the chart's top padding holds them). */
const MARKER_ROWS = 2;
const MARKER_ROW_PX = 13;
const MARKER_COLOR = '#ff6b6b';

const isValue = (v: number | null | undefined): boolean => v != null && Number.isFinite(v);

function countGaps(ys: ArrayLike<number | null | undefined>): number {
  let n = 0;
  for (let i = 0; i < ys.length; i++) if (!isValue(ys[i])) n++;
  return n;
}

/**
 * uPlot draws a gap where a value is null (a NaN would poison its scale): a column holding non-finite
 * values, which only a columnar frame's views carry, gets them as nulls. Every other column, typed views
 * included, is drawn as it is.
 */
function gapsAsNull(ys: uPlot.AlignedData[number]): uPlot.AlignedData[number] {
  const col = ys as ArrayLike<number | null | undefined>;
  let i = 0;
  while (i < col.length && (col[i] == null || Number.isFinite(col[i]))) i++;
  if (i === col.length) return ys;
  // An alignment hole stays `undefined` (spanned); a recorded non-finite value becomes a gap (null).
  return Array.from(col, (v) => (v === undefined ? undefined : v !== null && Number.isFinite(v) ? v : null)) as (number | null)[];
}

/** Series rows a compact legend keeps (a chart with more than two more than this is compacted). */
export const LEGEND_ROWS = 5;

interface LegendState {
  /** Whether the chart has too many series for a whole legend. */
  many: boolean;
  /** Every row asked for (a bounded box that scrolls). */
  all: boolean;
  /** The series nearest the cursor (uPlot's focus), or -1. */
  focus: number;
  /** Smoothing on: each series is a faint raw line and its smoothed one, after it. */
  paired: boolean;
}

/** Each chart's legend rows in series order (index 0: the x value), as uPlot made them. */
const legendRows = new WeakMap<uPlot, HTMLElement[]>();

/**
 * Keeps a many-series legend to LEGEND_ROWS rows: at the cursor, the series nearest it and then those with the
 * highest values there; away from the chart, the first series. Every row is kept (in series order) when all are
 * asked for, the box then scrolling; a smoothed series' raw twin is listed only then.
 */
function compactLegend(u: uPlot, st: LegendState): void {
  const body = u.root.querySelector('.u-legend tbody') ?? u.root.querySelector('.u-legend');
  if (!body) return;
  let rows = legendRows.get(u);
  if (!rows || rows.length !== u.series.length) {
    rows = [...body.querySelectorAll<HTMLElement>(':scope > .u-series')];
    if (rows.length !== u.series.length) return;
    legendRows.set(u, rows);
  }
  const all = !st.many || st.all;
  let shown: number[];
  if (all) shown = rows.map((_, i) => i).slice(1);
  else {
    // a raw twin stands for its smoothed series
    const own = (i: number) => (st.paired && i % 2 === 1 ? i + 1 : i);
    const candidates = u.series.map((_, i) => i).filter((i) => i > 0 && own(i) === i && u.series[i]!.show !== false);
    const idx = u.cursor.idx;
    const at = (i: number): number => {
      const v = idx == null ? null : (u.data[i] as ArrayLike<number | null | undefined>)[idx];
      return v != null && Number.isFinite(v) ? v : -Infinity;
    };
    const ranked = idx == null ? candidates : [...candidates].sort((a, b) => at(b) - at(a) || a - b);
    const focus = st.focus > 0 ? own(st.focus) : -1;
    shown = (focus > 0 && candidates.includes(focus) ? [focus, ...ranked.filter((i) => i !== focus)] : ranked).slice(0, LEGEND_ROWS);
  }
  const order = [0, ...shown];
  const on = new Set(order);
  const want = all ? rows : [...order.map((i) => rows[i]!), ...rows.filter((_, i) => !on.has(i))];
  // moved only when the order changed (uPlot keeps its own references to the rows)
  if (want.some((r, k) => body.children[k] !== r)) for (const r of want) body.appendChild(r);
  rows.forEach((r, i) => (r.style.display = on.has(i) ? '' : 'none'));
  u.root.setAttribute('data-legend-shown', String(shown.length));
}

/** Line opacity of overlaid runs: two identical histories blend instead of one hiding the other. */
const OVERLAY_ALPHA = 0.7;
/** Opacity of the series not hovered. */
const DIMMED_ALPHA = 0.15;

/** The run hovered in the run picker or in any overlaid chart: every overlaid chart brings its line forward. */
export const hoveredRun = store<string | null>(null);

export function ChartPanel({ metric, description, tables, xKind, xLabel, smoothing, zoom, onZoom, xExtent, hidden, markers, axisNote, overlaid, coverage, absent, leftOut }: Props) {
  const hovered = useStore(hoveredRun);
  const highlight = overlaid ? hovered : null;
  const [logY, setLogY] = useState(false);
  const unit = unitOf(metric);
  // A log scale needs positive values throughout.
  const logAble = tables.some((t) => t.y.some(isValue)) && tables.every((t) => t.y.every((v) => !isValue(v) || v! > 0));
  const log = logY && logAble;
  const visible = useMemo(() => (hidden?.size ? tables.filter((t) => !hidden.has(t.label)) : tables), [tables, hidden]);
  const data = useMemo<uPlot.AlignedData>(() => {
    // (every series hidden: an empty chart, said so below)
    if (visible.length === 0) return [[]] as unknown as uPlot.AlignedData;
    const joined: uPlot.AlignedData =
      visible.length === 1 ? [visible[0]!.x, visible[0]!.y as number[]] : uPlot.join(visible.map((t) => [t.x, t.y as number[]]));
    const base = [joined[0], ...joined.slice(1).map(gapsAsNull)] as uPlot.AlignedData;
    if (smoothing <= 0) return base;
    const out: (ArrayLike<number | null> | number[])[] = [base[0]];
    for (let i = 1; i < base.length; i++) {
      const raw = Array.from(base[i]! as ArrayLike<number | null | undefined>);
      // Alignment holes stay holes (spanned), not gaps, in the smoothed line too.
      const smooth: (number | null | undefined)[] = ema(raw, smoothing);
      for (let k = 0; k < raw.length; k++) if (raw[k] === undefined) smooth[k] = undefined;
      out.push(base[i]! as number[], smooth as (number | null)[]);
    }
    return out as uPlot.AlignedData;
  }, [visible, smoothing]);

  const seriesKey = `${visible.map((t) => `${t.label}:${t.color ?? ''}`).join('|')}#${smoothing > 0}`;
  const options = useMemo<Omit<uPlot.Options, 'width' | 'height'>>(() => {
    const series: uPlot.Series[] = [{ label: xLabel, value: (_u, v) => (v == null ? '—' : xKind === 'time' ? timeOfDay(v) : String(v)) }];
    const gaps = xKind === 'time' ? breakLongGaps : undefined;
    // On time charts uPlot calls `gaps` only when gaps are not spanned; the joins' alignment holes are
    // `undefined`, which it spans anyway, so only recorded gaps (null) and long silences break a line.
    const spanGaps = xKind !== 'time';
    visible.forEach((t, i) => {
      const color = t.color ?? SERIES_COLORS[i % SERIES_COLORS.length]!;
      const many = visible.length > 1 || t.x.length > 80;
      const value = (_u: uPlot, v: number | null) => fmtNum(v);
      if (smoothing > 0) {
        series.push({ label: `${t.label} (raw)`, stroke: alpha(color, 0.3), width: 1, spanGaps, gaps, points: { show: false }, value });
        series.push({ label: t.label, stroke: overlaid ? alpha(color, OVERLAY_ALPHA) : color, width: 2, spanGaps, gaps, points: { show: false }, value });
      } else {
        // Several engines on one chart: a dash per series keeps overlapping lines apart.
        const dash = visible.length > 1 ? DASHES[i % DASHES.length] : undefined;
        const stroke = overlaid ? alpha(color, OVERLAY_ALPHA) : color;
        series.push({ label: t.label, stroke, width: 1.75, dash, spanGaps, gaps, points: { show: !many, size: 5, fill: stroke, filter: gaps ? isolatedPoints : undefined }, value });
      }
    });
    return {
      series,
      // Wall time is shown in UTC everywhere, so charts, tooltips and permalinks agree.
      tzDate: (ts: number) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: {
        x: {
          time: xKind === 'time',
          // uPlot's own range (on creation, new data, its double-click) is the zoom, else the full range; a window
          // set here (a drag, a zoom from the URL) is kept exactly as asked.
          range: (u, min, max) => {
            if (min == null || max == null) return [min, max];
            const set = xRef.set;
            if (set && set[0] === min && set[1] === max) return [min, max];
            const xs = u.data?.[0];
            const auto = !xs?.length || xs.length === 1 || (min === xs[0] && max === xs[xs.length - 1]);
            if (!auto) return [min, max];
            return zoomRef.z ?? chartFullRange(u) ?? [min, max];
          },
        },
        y: log ? { distr: 3 } : { range: yRange },
      },
      axes: [axis('x', xKind), axis('y', xKind, unit)],
      // The series nearest the cursor comes forward (the hovered run, when runs are overlaid).
      focus: { alpha: DIMMED_ALPHA },
      // A drag zooms through onZoom (the URL), which sets every chart's window; uPlot does not set it itself.
      cursor: { sync: { key: 'metrics', setSeries: false }, drag: { x: true, y: false, setScale: false }, points: { size: 6 }, focus: { prox: 12 } },
      legend: { live: true },
      padding: [markers?.length ? 10 + MARKER_ROWS * MARKER_ROW_PX : 10, 12, 0, 0],
      hooks: {
        init: [
          (u) => {
            u.over.addEventListener('mousedown', () => (dragFrom = u));
            u.over.addEventListener('dblclick', () => onZoomRef.fn(null));
          },
        ],
        destroy: [
          (u) => {
            if (dragFrom === u) dragFrom = null;
          },
        ],
        // The end of a drag: the chart it started in asks for that window; every chart clears its selection box.
        setSelect: [
          (u) => {
            const { left, width } = u.select;
            if (width <= 0) return;
            const from = dragFrom === u;
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            if (!from) return;
            dragFrom = null;
            const min = u.posToVal(left, 'x');
            const max = u.posToVal(left + width, 'x');
            if (max > min) onZoomRef.fn([min, max]);
          },
        ],
        // Hovering near a run's line in one overlaid chart brings that run forward in all of them.
        setSeries: [
          (u, i, opts) => {
            if ((opts as { focus?: boolean }).focus === undefined) return;
            // the nearest series heads a compact legend
            legendRef.focus = i ?? -1;
            compactLegend(u, legendRef);
            if (!overlaidRef.on) return;
            hoveredRun.set(i === null ? null : (String(u.series[i]?.label ?? '') || null));
          },
        ],
        // Many series: the legend keeps a few rows, the nearest series and the highest values at the cursor.
        setLegend: [(u) => compactLegend(u, legendRef)],
        ready: [(u) => compactLegend(u, legendRef)],
        // The x tick labels' boxes, for a test (and a reader) to check they never overlap.
        draw: [
          (u) => drawMarkers(u, markersRef.list),
          (u) => drawUnreadSteps(u, coverageRef.c),
          (u) => {
            const ax = u.axes[0] as uPlot.Axis & { _splits?: number[]; _values?: (string | number | null)[] };
            if (!ax._splits || !ax._values) return;
            u.ctx.save();
            u.ctx.font = '11px system-ui, sans-serif';
            const boxes = ax._splits.map((v, i) => {
              const text = String(ax._values![i] ?? '');
              const w = text ? u.ctx.measureText(text).width : 0;
              const x = u.valToPos(v, 'x');
              return [Math.round(x - w / 2), Math.round(x + w / 2), text];
            });
            u.ctx.restore();
            u.root.setAttribute('data-xticks', JSON.stringify(boxes.filter((b) => b[2] !== '')));
          },
        ],
      },
    };
    // A new set of markers (the topology arrives after the series) rebuilds the chart to draw them.
  }, [seriesKey, xKind, xLabel, log, markers?.length ?? 0]);

  // A chart of many series (a fleet's engines) keeps its legend to a few rows unless every row is asked for.
  const many = visible.length > LEGEND_ROWS + 2;
  const [allRows, setAllRows] = useState(false);
  const legendRef = useMemo<LegendState>(() => ({ many: false, all: false, focus: -1, paired: false }), []);
  legendRef.many = many;
  legendRef.all = allRows;
  legendRef.paired = smoothing > 0;
  useEffect(() => {
    if (plot.current) compactLegend(plot.current, legendRef);
  }, [many, allRows]);

  const markersRef = useMemo(() => ({ list: [] as Marker[] }), []);
  const coverageRef = useMemo(() => ({ c: undefined as StepCoverage | undefined }), []);
  coverageRef.c = coverage;
  const overlaidRef = useMemo(() => ({ on: false }), []);
  overlaidRef.on = !!overlaid;
  markersRef.list = markers ?? [];
  const onZoomRef = useMemo(() => ({ fn: onZoom }), []);
  onZoomRef.fn = onZoom;
  const zoomRef = useMemo(() => ({ z: zoom }), []);
  zoomRef.z = zoom;
  const extentRef = useMemo(() => ({ e: xExtent }), []);
  extentRef.e = xExtent;
  /** The last window set on the chart here, which its range keeps as it is. */
  const xRef = useMemo(() => ({ set: null as [number, number] | null }), []);
  /** This chart's full x range: its data, the axis' extent and its unread steps (the page's keys use the same rule). */
  const chartFullRange = (u: uPlot) => fullXRange(u.data?.[0], extentRef.e, coverageRef.c?.unread ?? []);

  // A run hovered elsewhere (the run picker, another chart's legend) is brought forward here too.
  const plot = useRef<uPlot | null>(null);
  const focusRun = (u: uPlot, run: string | null) => {
    const i = run ? u.series.findIndex((s, k) => k > 0 && s.label === run) : -1;
    const want = i > 0 ? run! : '';
    if ((u.root.getAttribute('data-highlight') ?? '') === want) return;
    u.root.setAttribute('data-highlight', want);
    u.setSeries(i > 0 ? i : null, { focus: true }, false);
  };
  useEffect(() => {
    if (plot.current) focusRun(plot.current, highlight);
  }, [highlight]);

  // The zoom window, or the full range once it is reset or the axis' extent grows (another chart's data).
  const fitX = (u: uPlot) => {
    const want = zoomRef.z ?? chartFullRange(u);
    if (!want || (u.scales.x.min === want[0] && u.scales.x.max === want[1])) return;
    xRef.set = [want[0], want[1]];
    u.setScale('x', { min: want[0], max: want[1] });
  };
  useEffect(() => {
    if (plot.current) fitX(plot.current);
  }, [zoom?.[0], zoom?.[1], xExtent?.[0], xExtent?.[1]]);

  const points = visible.reduce((n, t) => n + (t.y as ArrayLike<number | null>).length - countGaps(t.y), 0);

  // Told in words: the chart's name says the metric and its series (the runs, the engines), its description the values.
  const names = visible.map((t) => t.label);
  const label =
    names.length === 1 && names[0] === metric
      ? `${metric} chart`
      : `${metric} chart of ${names.length} series: ${names.slice(0, 5).join(', ')}${names.length > 5 ? ` and ${names.length - 5} more` : ''}`;
  const summary = useMemo(() => seriesSummary(xLabel, visible, xKind === 'time' ? timeOfDay : String), [visible, xLabel, xKind]);

  /** W/S/A/D/Esc on a focused chart zoom and pan its own axis (this chart's window, around its cursor). */
  function zoomKey(e: KeyboardEvent, u: uPlot): boolean {
    // the page's keys (and its choice to turn the letter keys off), taken here before the page sees them
    const action = keyAction(e.key, letterKeys.get());
    if (action === 'next' || action === 'prev') return false;
    const { min, max } = u.scales.x;
    const full = chartFullRange(u);
    if (!action || !full || min == null || max == null) return false;
    const idx = u.cursor.idx;
    const anchor = idx != null && (u.cursor.left ?? -1) >= 0 ? u.data[0][idx] : null;
    onZoomRef.fn(zoomByKey(action, [min, max], full, anchor));
    return true;
  }

  function download() {
    // a series on another step key than the others says which in its column's name
    const header = [xLabel, ...visible.map((t) => (t.xLabel ? `${t.label} on ${t.xLabel}` : t.label))];
    const raw = visible.length === 1 ? [visible[0]!.x, visible[0]!.y] : [data[0], ...data.slice(1).filter((_, i) => smoothing <= 0 || i % 2 === 0)];
    downloadText(`${metric.replace(/[^\w.-]+/g, '_')}.csv`, toCsv(header, raw as ArrayLike<unknown>[]));
  }

  return (
    <section class={`panel chart-panel${many ? ` many-series${allRows ? ' legend-all' : ''}` : ''}`} data-metric={metric} data-markers={markers?.map((m) => m.label).join(' | ') || undefined}>
      <header>
        <h3 title={description || metric}>{metric}</h3>
        <CoverageNote coverage={coverage} />
        <button
          class="icon"
          aria-pressed={log ? 'true' : 'false'}
          data-testid="log-toggle"
          disabled={!logAble}
          title={logAble ? 'log scale for y' : 'log scale needs positive values only'}
          onClick={() => setLogY(!logY)}
        >
          log
        </button>
        <button class="icon" data-testid="csv-download" title="download this chart's data as CSV" onClick={download} disabled={points === 0}>
          CSV
        </button>
      </header>
      {description && <p class="desc">{description}</p>}
      {axisNote && (
        <p class="axis-note" data-testid="axis-note">
          {axisNote}
        </p>
      )}
      {leftOut && leftOut.length > 0 && (
        <p class="axis-note left-out" data-testid="left-out" data-runs={leftOut.map((r) => r.run).join(',')}>
          not on this time axis: {leftOut.map((r) => `${r.run} (${r.why})`).join('; ')}
        </p>
      )}
      {absent && absent.length > 0 && (
        <p class="axis-note key-absent" data-testid="key-absent" data-runs={absent.join(',')}>
          not in {absent.join(', ')}: {absent.length === 1 ? 'that run does' : 'those runs do'} not list this key
        </p>
      )}
      {points === 0 ? (
        <p class="muted chart-empty">
          {tables.length > 0 && visible.length === 0
            ? 'every series of this chart is hidden: tick some above'
            : coverage
              ? 'no step read yet: points appear as the server reads the steps'
              : `no values recorded for this key${xKind === 'step' ? ` on ${xLabel}` : ''}`}
        </p>
      ) : (
        <>
          <UPlotChart
            options={options}
            data={data}
            height={200}
            label={label}
            summary={summary}
            onKey={zoomKey}
            keyHint="W and S zoom, A and D pan, Escape resets the zoom."
            onCreate={(u) => ((plot.current = u), focusRun(u, highlight), markPainted('metrics'))} />
          {many && (
            <p class="legend-more" data-testid="legend-more">
              <button class="icon" aria-expanded={allRows ? 'true' : 'false'} data-testid="legend-toggle" onClick={() => setAllRows(!allRows)}>
                {allRows ? 'fewer' : `+${visible.length - LEGEND_ROWS} more`}
              </button>
              <span class="muted">{allRows ? `all ${visible.length} series, values at the cursor` : `${LEGEND_ROWS} of ${visible.length} series: the nearest to the cursor, then the highest there`}</span>
            </p>
          )}
        </>
      )}
    </section>
  );
}
