// The trace explorer: one canvas row per sample, spans in lanes, point events, [P]/[D] lanes; filter,
// sort, search, zoom, relative/absolute time and a details panel. Framework-free so the app's Trace view
// and the self-contained page `rlsight trace` writes share it. Only the rows in view are drawn.
import type { TraceAnswer, TraceDetails, TraceItem, TraceRow } from '../../../src/wire/trace.ts';

export interface ExplorerHost {
  loadDetails(row: number): Promise<TraceDetails>;
  /** Click-through to the sample's conversation and tokens (absent: no button). */
  openSample?(row: TraceRow): void;
  /** The zoom (seconds since the answer's t0) and the selected span (row, item id) to open with. */
  initial?: { view?: [number, number] | null; select?: { row: number; item: number | null } | null };
  /** Told whenever the zoom or the selection changes (null view: fit all), e.g. to keep them in the URL. */
  onState?(state: { view: [number, number] | null; select: { row: number; item: number | null } | null }): void;
}

const LANE_H = 16;
const ROW_PAD = 6;
const LABEL_W = 190;
const AXIS_H = 26;
const PD_COLORS: Record<string, string> = {
  forward: '#3b7dd8',
  transfer: '#d99a22',
  transfer_queue: '#e7b95a',
  bootstrap_queue: '#b9ad95',
  bootstrap: '#8f8672',
  alloc_wait: '#a7a7a7',
  prealloc: '#c9bfae',
};

/**
 * The colour of an orphan end's × (an end without a start): only those are drawn in it. This is the light page's;
 * the chart and its legend take `--trace-orphan` (EXPLORER_CSS), the app's own red on its dark theme.
 */
export const ORPHAN_COLOR = '#a12626';
/** The colour of an open span's dashed outline. */
const OPEN_COLOR = '#a64f37';

/** The hue a span or point event of this name is drawn in. */
function hue(name: string): number {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  return Math.abs(h) % 360;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmtRel(s: number): string {
  const a = Math.abs(s);
  if (a === 0) return '0';
  if (a < 1) return `${(s * 1000).toFixed(a < 0.01 ? 2 : 1)} ms`;
  if (a < 60) return `${s.toFixed(2)} s`;
  return `${Math.floor(s / 60)}m ${(s % 60).toFixed(1)}s`;
}

function fmtAbs(epoch: number): string {
  return new Date(epoch * 1000).toISOString().slice(11, 23);
}

/** `text` cut to `maxW` pixels with an ellipsis (whole when it fits). */
function fitText(ctx: CanvasRenderingContext2D, text: string, maxW: number): string {
  if (ctx.measureText(text).width <= maxW) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= maxW) lo = mid;
    else hi = mid - 1;
  }
  return lo > 0 ? `${text.slice(0, lo)}…` : '';
}

function niceStep(range: number, target: number): number {
  const raw = range / target;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

const HINT = 'click a span or event for its attrs (or Tab to the list of samples: ↑/↓ sample, ←/→ its spans and events, Enter its details, Esc back) · drag to zoom to a range, Ctrl+wheel to zoom in or out · once zoomed, Shift+wheel or a sideways swipe pans (or click the chart, then ←/→ pan and +/− zoom) · double-click to fit';

/** What an item is, in words: its kind, for the sample list and what is announced. */
function kindWords(it: TraceItem): string {
  if (it.kind === 'point') return 'event';
  if (it.kind === 'open') return 'open span, never ended';
  if (it.kind === 'orphan') return 'orphan end, no start';
  if (it.kind === 'pd') return `${it.role === 'P' ? 'prefill' : 'decode'} segment`;
  return 'span';
}

/** The items of a row in time order (then lane), as ←/→ walk them. */
function timeOrder(items: TraceItem[]): TraceItem[] {
  return [...items].sort((a, b) => a.start - b.start || a.lane - b.lane || a.id - b.id);
}

/** Each mounted explorer's element ids are its own (the app mounts a new one per step). */
let mounts = 0;

/** A swatch and its words. */
function legendEntry(swatch: HTMLElement, text: string): HTMLElement {
  const e = el('span', { class: 'trace-legend-entry' });
  e.append(swatch, document.createTextNode(text));
  return e;
}

/** What the chart's colours and marks mean: spans and events by name, open spans, orphan ends, the [P]/[D] lanes. */
function traceLegend(answer: TraceAnswer): HTMLElement {
  const legend = el('div', { class: 'trace-legend', 'data-testid': 'trace-legend' });
  const box = (style: string, text = ''): HTMLElement => el('span', { class: 'trace-swatch', style }, text);
  legend.append(
    legendEntry(box('background:hsl(210 55% 50%)'), 'span'),
    legendEntry(box('background:hsl(30 70% 28%);transform:rotate(45deg) scale(0.7)'), 'event (both coloured by name)'),
    legendEntry(box(`background:hsla(210,55%,50%,0.35);border:1px dashed ${OPEN_COLOR}`), 'open span (never ended)'),
    legendEntry(box('color:var(--trace-orphan);font-weight:bold;text-align:center;line-height:10px', '×'), 'orphan end (no start)'),
  );
  if (answer.rows.some((r) => r.lanes.includes('[P]') || r.lanes.includes('[D]'))) {
    legend.append(legendEntry(box('color:var(--trace-p);width:auto', '[P]'), 'prefill,'), legendEntry(box('color:var(--trace-d);width:auto', '[D]'), 'decode:'));
    for (const [name, color] of Object.entries(PD_COLORS)) legend.append(legendEntry(box(`background:${color}`), name.replace(/_/g, ' ')));
  }
  return legend;
}

export function mountTraceExplorer(root: HTMLElement, answer: TraceAnswer, host: ExplorerHost): { destroy(): void } {
  root.classList.add('trace-explorer');
  root.replaceChildren();
  const bar = el('div', { class: 'trace-toolbar' });
  const search = el('input', { type: 'search', placeholder: 'search sample, status, label, trace id, request id, span name, attr value', 'aria-label': 'search', 'data-testid': 'trace-search', size: '42' });
  const status = el('select', { 'aria-label': 'status filter', 'data-testid': 'trace-status' });
  const attempt = el('select', { 'aria-label': 'attempt filter', 'data-testid': 'trace-attempt' });
  const nameSel = el('select', { 'aria-label': 'name filter', 'data-testid': 'trace-name' });
  const sort = el('select', { 'aria-label': 'sort', 'data-testid': 'trace-sort' });
  const desc = el('input', { type: 'checkbox', 'aria-label': 'descending', 'data-testid': 'trace-desc' });
  const timeMode = el('select', { 'aria-label': 'time axis', 'data-testid': 'trace-time' });
  const fit = el('button', { type: 'button', 'data-testid': 'trace-fit' }, 'fit all');
  const statuses = [...new Set(answer.rows.map((r) => r.status ?? 'none'))].sort();
  status.append(el('option', { value: '' }, 'all statuses'), ...statuses.map((s) => el('option', { value: s }, s)));
  const attempts = [...new Set(answer.rows.flatMap((r) => r.items.map((i) => i.attempt)))].sort((a, b) => a - b);
  attempt.append(el('option', { value: '' }, 'all attempts'), ...attempts.map((a) => el('option', { value: String(a) }, `attempt ${a}`)));
  nameSel.append(el('option', { value: '' }, 'all names'), ...answer.names.map((n) => el('option', { value: n }, n)));
  for (const [v, t] of [['start', 'sort: start'], ['duration', 'sort: duration'], ['reward', 'sort: reward']]) sort.append(el('option', { value: v }, t));
  for (const [v, t] of [['relative', 'relative time'], ['absolute', 'absolute time (UTC)']]) timeMode.append(el('option', { value: v }, t));
  const descLabel = el('label', {}, ' desc');
  descLabel.prepend(desc);
  bar.append(search, status, attempt, nameSel, sort, descLabel, timeMode, fit);
  const summary = el('div', { class: 'trace-summary', 'data-testid': 'trace-summary' });
  const notes = el('div', { class: 'trace-notes' });
  for (const n of answer.notes) notes.append(el('div', {}, n));
  // What is selected, in words, for a screen reader (polite) and for a sighted keyboard user (the list is not shown).
  const said = el('div', { class: 'trace-said', role: 'status', 'aria-live': 'polite', 'data-testid': 'trace-said' });
  const main = el('div', { class: 'trace-main' });
  const scroller = el('div', { class: 'trace-scroll', 'data-testid': 'trace-scroll' });
  const spacer = el('div', { class: 'trace-spacer' });
  // focusable, so the arrow keys pan and +/- zoom once the chart is clicked
  const canvas = el('canvas', { 'data-testid': 'trace-canvas', tabindex: '0', role: 'img' });
  scroller.append(canvas, spacer);
  // The chart's rows as a grid for the keyboard and screen readers: one row per sample shown, its header the
  // sample and its cells the sample's spans and events in time order. Focus stays on the grid and
  // aria-activedescendant names the current cell; only the current row's cells are built (a dump may hold
  // thousands of samples). It is not shown: the chart draws where it is.
  const uid = `trace${++mounts}`;
  const grid = el('div', { class: 'trace-grid', role: 'grid', tabindex: '0', 'data-testid': 'trace-grid' });
  // the details panel: what was clicked (replaced on each click) above the legend of the chart's colours
  const aside = el('aside', { class: 'trace-details', 'data-testid': 'trace-details', 'aria-label': 'span details' });
  const details = el('div');
  details.append(el('p', { class: 'hint', 'data-testid': 'trace-hint' }, HINT));
  aside.append(details, traceLegend(answer));
  main.append(scroller, grid, aside);
  // on the summary's line, so the chart keeps its height
  const line = el('div', { class: 'trace-line' });
  line.append(summary, said);
  root.append(bar, notes, line, main);

  const all = answer.rows;
  const globalStart = Math.min(0, ...all.map((r) => r.start));
  const globalEnd = Math.max(1e-3, ...all.map((r) => r.end));
  let v0 = globalStart;
  let v1 = globalEnd;
  let rows: TraceRow[] = all;
  let offsets: number[] = [0];
  let selected: { row: TraceRow; item: TraceItem | null } | null = null;
  let hits: Array<{ x: number; y: number; w: number; h: number; row: TraceRow; item: TraceItem | null }> = [];
  let drag: { x0: number; x1: number } | null = null;
  let frame = 0;
  let gridFocused = false;
  // the details being shown (an item's are fetched): Enter moves focus into them once they are there
  let showing: Promise<void> = Promise.resolve();

  const rowHeight = (r: TraceRow): number => r.lanes.length * LANE_H + ROW_PAD;
  const matches = (r: TraceRow, q: string): boolean => {
    if (!q) return true;
    const hay = [r.sample_index, r.row, r.status, r.label, r.source, r.trace_id, ...r.request_ids].map((x) => String(x ?? '').toLowerCase());
    return hay.some((h) => h.includes(q)) || r.items.some((i) => i.name.toLowerCase().includes(q) || (i.attr_text?.toLowerCase().includes(q) ?? false));
  };
  const itemVisible = (i: TraceItem): boolean => (attempt.value === '' || i.attempt === Number(attempt.value)) && (nameSel.value === '' || i.name === nameSel.value);

  function refilter(): void {
    const q = search.value.trim().toLowerCase();
    rows = all.filter((r) => (status.value === '' || (r.status ?? 'none') === status.value) && matches(r, q) && (attempt.value === '' && nameSel.value === '' ? true : r.items.some(itemVisible)));
    const key = sort.value;
    const val = (r: TraceRow): number => (key === 'duration' ? r.end - r.start : key === 'reward' ? (r.reward ?? -Infinity) : r.start);
    rows = [...rows].sort((a, b) => val(a) - val(b) || a.row - b.row);
    if (desc.checked) rows.reverse();
    offsets = [0];
    for (const r of rows) offsets.push(offsets[offsets.length - 1] + rowHeight(r));
    summary.textContent = `${rows.length} shown / ${all.length} traced samples${answer.untraced ? ` · ${answer.untraced} without trace` : ''} · rollout ${answer.rollout_id}${answer.evaluation ? ' (eval)' : ''}`;
    canvas.setAttribute('aria-label', `request traces of ${rows.length} samples, rollout ${answer.rollout_id}${answer.evaluation ? ' (eval)' : ''}: ←/→ pan, +/− zoom; the list of samples after the chart selects spans and events`);
    grid.setAttribute('aria-label', `traced samples, ${rows.length} shown: ↑/↓ sample, ←/→ its spans and events in time order, Enter opens the details`);
    grid.replaceChildren(
      ...rows.map((r) => {
        const tr = el('div', { role: 'row', id: `${uid}-r${r.row}` });
        tr.append(el('div', { role: 'rowheader', id: `${uid}-r${r.row}-h` }, rowWords(r)));
        return tr;
      }),
    );
    syncGrid();
    schedule();
  }

  /** A sample in words, as its label on the chart says it. */
  function rowWords(r: TraceRow): string {
    const n = r.items.filter(itemVisible).length;
    return `sample #${r.sample_index ?? r.row}, ${r.status ?? 'no status'}, reward ${r.reward ?? 'none'}, ${n} ${n === 1 ? 'span or event' : 'spans and events'}${r.open_spans ? `, ${r.open_spans} open` : ''}${r.orphans ? `, ${r.orphans} orphan ends` : ''}`;
  }

  /** A time on the axis as the time-axis control shows it (relative or UTC). */
  function when(t: number): string {
    return timeMode.value === 'absolute' ? `${fmtAbs(answer.t0 + t)} UTC` : fmtRel(t);
  }

  /** A span or event in words: name, kind, start and duration. */
  function itemWords(it: TraceItem): string {
    const lane = it.kind === 'pd' ? `[${it.role}] ` : '';
    return `${lane}${it.name}, ${kindWords(it)}, start ${when(it.start)}${it.kind === 'point' || it.kind === 'orphan' ? '' : `, duration ${fmtRel(it.end - it.start)}`}`;
  }

  /** The grid's current cell: the selection when it is in the rows shown, else the first sample. */
  function current(): { row: TraceRow; item: TraceItem | null } | null {
    if (selected && rows.includes(selected.row)) return selected;
    return rows[0] ? { row: rows[0], item: null } : null;
  }

  /** Points the grid at its current cell, building that row's cells (and dropping the previous row's). */
  function syncGrid(): void {
    for (const c of grid.querySelectorAll('[role=gridcell]')) c.remove();
    for (const c of grid.querySelectorAll('[aria-selected]')) c.removeAttribute('aria-selected');
    const cur = current();
    if (!cur) {
      grid.removeAttribute('aria-activedescendant');
      return;
    }
    const tr = grid.querySelector(`#${uid}-r${cur.row.row}`);
    if (!tr) return;
    for (const it of timeOrder(cur.row.items.filter(itemVisible))) tr.append(el('div', { role: 'gridcell', id: `${uid}-r${cur.row.row}-i${it.id}` }, itemWords(it)));
    const cell = grid.querySelector(cur.item ? `#${uid}-r${cur.row.row}-i${cur.item.id}` : `#${uid}-r${cur.row.row}-h`) ?? tr.firstElementChild;
    cell?.setAttribute('aria-selected', 'true');
    grid.setAttribute('aria-activedescendant', cell?.id ?? '');
  }

  function schedule(): void {
    if (!frame) frame = requestAnimationFrame(draw);
  }

  function draw(): void {
    frame = 0;
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(320, scroller.clientWidth);
    const h = Math.max(160, scroller.clientHeight);
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
      canvas.style.width = `${w}px`;
      canvas.style.height = `${h}px`;
    }
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    // The canvas stays in view (sticky); the spacer makes the rest of the rows' height scrollable.
    spacer.style.height = `${Math.max(0, offsets[offsets.length - 1] + AXIS_H - h)}px`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = '11px system-ui, sans-serif';
    // Colours follow the host page (the app is dark, the standalone page light).
    const ink = getComputedStyle(canvas).color || '#333';
    const theme = getComputedStyle(root);
    const laneColor = { '[P]': theme.getPropertyValue('--trace-p').trim(), '[D]': theme.getPropertyValue('--trace-d').trim() };
    const orphanColor = theme.getPropertyValue('--trace-orphan').trim() || ORPHAN_COLOR;
    const bodyBg = getComputedStyle(document.body).backgroundColor;
    const paper = !bodyBg || bodyBg === 'rgba(0, 0, 0, 0)' || bodyBg === 'transparent' ? '#fafaf8' : bodyBg;
    const plotW = w - LABEL_W;
    const x = (t: number): number => LABEL_W + ((t - v0) / (v1 - v0)) * plotW;
    const top = scroller.scrollTop;
    hits = [];
    // Binary search the first row in view.
    let lo = 0;
    let hi = rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (offsets[mid + 1] <= top) lo = mid + 1;
      else hi = mid;
    }
    let drawnRows = 0;
    let drawnItems = 0;
    let cutLabels = 0;
    const pdLanes = new Set<string>();
    let markBox: { x: number; y: number; w: number; h: number } | null = null;
    // While the sample list has focus, its current cell is ringed even before anything is selected.
    const marked = selected ?? (gridFocused ? current() : null);
    for (let i = lo; i < rows.length && offsets[i] - top < h; i++) {
      const r = rows[i];
      const y0 = AXIS_H + offsets[i] - top;
      drawnRows++;
      ctx.fillStyle = i % 2 ? 'rgba(127,127,127,0.06)' : 'rgba(127,127,127,0.02)';
      if (selected?.row === r) ctx.fillStyle = 'rgba(181,80,42,0.12)';
      ctx.fillRect(0, y0, w, rowHeight(r));
      hits.push({ x: 0, y: y0, w: LABEL_W, h: rowHeight(r), row: r, item: null });
      // inside the row's label, so the rows around it (and the axis over the first) leave it whole
      if (marked?.row === r && !marked.item) markBox = { x: 4, y: y0 + 4, w: LABEL_W - 8, h: rowHeight(r) - 8 };
      ctx.fillStyle = ink;
      const label = `#${r.sample_index ?? r.row} ${r.status ?? ''} r=${r.reward ?? '–'}${r.open_spans ? ` ⚠${r.open_spans} open` : ''}${r.orphans ? ` ✗${r.orphans}` : ''}`;
      ctx.fillText(label, 6, y0 + 12, LABEL_W - 40);
      r.lanes.forEach((l, li) => {
        if (!l) return;
        pdLanes.add(l);
        ctx.fillStyle = l === '[P]' ? laneColor['[P]'] : laneColor['[D]'];
        ctx.fillText(l, LABEL_W - 28, y0 + li * LANE_H + 12);
      });
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, y0, plotW, rowHeight(r));
      ctx.clip();
      for (const it of r.items) {
        if (it.end < v0 || it.start > v1) continue;
        const dim = !itemVisible(it);
        const ly = y0 + it.lane * LANE_H + 2;
        const x0 = x(it.start);
        const xw = Math.max(1, x(it.end) - x0);
        ctx.globalAlpha = dim ? 0.15 : 1;
        drawnItems++;
        if (it.kind === 'point' || it.kind === 'orphan') {
          const cx = x0;
          const cy = ly + 6;
          if (it.kind === 'orphan') {
            ctx.strokeStyle = orphanColor;
            ctx.lineWidth = 2;
            ctx.beginPath();
            ctx.moveTo(cx - 4, cy - 4);
            ctx.lineTo(cx + 4, cy + 4);
            ctx.moveTo(cx + 4, cy - 4);
            ctx.lineTo(cx - 4, cy + 4);
            ctx.stroke();
          } else {
            // by its name, as spans are: a root-level event (no parent span, as slime's attempt_start) is normal,
            // so it is not drawn in the orphan colour
            ctx.fillStyle = `hsl(${hue(it.name)} 70% 28%)`;
            ctx.beginPath();
            ctx.moveTo(cx, cy - 5);
            ctx.lineTo(cx + 4, cy);
            ctx.lineTo(cx, cy + 5);
            ctx.lineTo(cx - 4, cy);
            ctx.closePath();
            ctx.fill();
          }
          hits.push({ x: cx - 5, y: ly, w: 10, h: 12, row: r, item: it });
        } else if (it.kind === 'pd') {
          const hh = it.inner ? 6 : 12;
          const yy = it.inner ? ly + 6 : ly;
          ctx.fillStyle = PD_COLORS[it.name] ?? '#999';
          ctx.globalAlpha = (dim ? 0.15 : 1) * (it.inner ? 1 : 0.75);
          ctx.fillRect(x0, yy, xw, hh);
          hits.push({ x: x0, y: yy, w: xw, h: hh, row: r, item: it });
        } else {
          ctx.fillStyle = `hsl(${hue(it.name)} 55% 50%)`;
          if (it.kind === 'open') ctx.globalAlpha = dim ? 0.1 : 0.35;
          ctx.fillRect(x0, ly, xw, 12);
          if (it.kind === 'open') {
            ctx.setLineDash([5, 3]);
            ctx.strokeStyle = OPEN_COLOR;
            ctx.strokeRect(x0 + 0.5, ly + 0.5, xw - 1, 11);
            ctx.setLineDash([]);
          }
          if (xw > 30) {
            ctx.globalAlpha = 1;
            ctx.fillStyle = '#111';
            const text = it.kind === 'open' ? `${it.name} (open, clipped at ${it.clipped_by})` : it.name;
            const left = Math.max(x0, LABEL_W) + 3;
            // A label longer than its span ends in an ellipsis, never cut mid-letter.
            const shown = fitText(ctx, text, x0 + xw - left - 3);
            if (shown) ctx.fillText(shown, left, ly + 10);
            if (shown !== text) cutLabels++;
          }
          hits.push({ x: x0, y: ly, w: xw, h: 12, row: r, item: it });
        }
        ctx.globalAlpha = 1;
        // The selected item is outlined whatever its kind (a click or the keyboard selects it).
        if (marked?.item === it) {
          const hb = hits[hits.length - 1]!;
          const pad = it.kind === 'point' || it.kind === 'orphan' ? 2 : 0;
          const left = Math.max(LABEL_W, hb.x - pad);
          markBox = { x: left, y: hb.y - pad, w: Math.min(w, hb.x + hb.w + pad) - left, h: hb.h + 2 * pad };
        }
      }
      ctx.restore();
    }
    // Drawn over every row, so the next row's background does not cover it; the axis is drawn over it in turn.
    if (markBox) mark(ctx, markBox, selected !== null);
    // Axis.
    ctx.fillStyle = paper;
    ctx.fillRect(0, 0, w, AXIS_H);
    ctx.strokeStyle = '#bbb';
    ctx.beginPath();
    ctx.moveTo(0, AXIS_H - 0.5);
    ctx.lineTo(w, AXIS_H - 0.5);
    ctx.stroke();
    const step = niceStep(v1 - v0, Math.max(2, plotW / 110));
    ctx.fillStyle = ink;
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const tx = x(t);
      ctx.fillRect(tx, AXIS_H - 6, 1, 6);
      ctx.fillStyle = 'rgba(127,127,127,0.15)';
      ctx.fillRect(tx, AXIS_H, 1, h - AXIS_H);
      ctx.fillStyle = ink;
      ctx.fillText(timeMode.value === 'absolute' ? fmtAbs(answer.t0 + t) : fmtRel(t), tx + 2, 14);
    }
    ctx.fillText(timeMode.value === 'absolute' ? 'UTC time of day' : `0 = ${new Date(answer.t0 * 1000).toISOString().replace('T', ' ').slice(0, 23)} UTC`, 6, 14, LABEL_W - 8);
    if (drag) {
      ctx.fillStyle = 'rgba(59,125,216,0.18)';
      ctx.fillRect(Math.min(drag.x0, drag.x1), AXIS_H, Math.abs(drag.x1 - drag.x0), h);
    }
    canvas.dataset.drawnRows = String(drawnRows);
    canvas.dataset.drawnItems = String(drawnItems);
    canvas.dataset.cutLabels = String(cutLabels);
    canvas.dataset.pdLanes = [...pdLanes].sort().join(',');
    canvas.dataset.view = `${v0.toFixed(6)},${v1.toFixed(6)}`;
  }

  /** Outlines the selection; while the sample list has focus, a dashed ring around it is its focus indicator. */
  function mark(ctx: CanvasRenderingContext2D, b: { x: number; y: number; w: number; h: number }, isSelected: boolean): void {
    ctx.save();
    ctx.strokeStyle = '#b5502a';
    ctx.lineWidth = 2;
    if (isSelected) ctx.strokeRect(b.x, b.y, b.w, b.h);
    if (gridFocused) {
      ctx.strokeStyle = getComputedStyle(root).getPropertyValue('--accent').trim() || '#b5502a';
      ctx.setLineDash([4, 2]);
      ctx.strokeRect(b.x - 3, b.y - 3, b.w + 6, b.h + 6);
    }
    ctx.restore();
  }

  function timeAt(px: number): number {
    const plotW = Math.max(1, canvas.clientWidth - LABEL_W);
    return v0 + ((px - LABEL_W) / plotW) * (v1 - v0);
  }

  function report(): void {
    const fitted = v0 === globalStart && v1 === globalEnd;
    host.onState?.({ view: fitted ? null : [v0, v1], select: selected ? { row: selected.row.row, item: selected.item?.id ?? null } : null });
  }

  async function showDetails(row: TraceRow, item: TraceItem | null, announce = true): Promise<void> {
    selected = { row, item };
    report();
    schedule();
    syncGrid();
    if (announce) {
      const at = rows.indexOf(row);
      said.textContent = `${item ? `${itemWords(item)} · ` : ''}sample #${row.sample_index ?? row.row}${at >= 0 ? `, row ${at + 1} of ${rows.length}` : ''}`;
    }
    // focusable by script only: Enter in the sample list moves focus here, Esc goes back
    details.replaceChildren(el('h3', { tabindex: '-1', 'data-testid': 'trace-details-title' }, `sample #${row.sample_index ?? row.row}`));
    const facts = el('dl');
    const put = (k: string, v: unknown): void => {
      facts.append(el('dt', {}, k), el('dd', {}, typeof v === 'string' ? v : JSON.stringify(v)));
    };
    put('row', row.row);
    put('group', row.group_index);
    put('status', row.status);
    put('reward', row.reward);
    put('trace id', row.trace_id);
    if (row.request_ids.length) put('request ids', row.request_ids.join(', '));
    details.append(facts);
    if (host.openSample) {
      const open = el('button', { type: 'button', 'data-testid': 'trace-open-sample' }, 'open sample conversation and tokens →');
      open.onclick = () => host.openSample?.(row);
      details.append(open);
    }
    if (!item) return;
    const d = await host.loadDetails(row.row);
    const it = d.items[item.id];
    if (!it || selected?.item !== item) return;
    details.append(el('h4', {}, `${it.name} (${it.kind})`));
    const f2 = el('dl', { 'data-testid': 'trace-item-facts' });
    const add = (k: string, v: unknown): void => {
      f2.append(el('dt', {}, k), el('dd', {}, typeof v === 'string' ? v : JSON.stringify(v)));
    };
    add('start', `${fmtRel(it.start - answer.t0)} (${fmtAbs(it.start)} UTC)`);
    add('end', it.end === null ? (it.kind === 'open' ? 'never ended' : '—') : `${fmtRel(it.end - answer.t0)} · duration ${fmtRel(it.end - it.start)}`);
    if (it.clipped_by) add('open span', `no span_end recorded; drawn up to ${it.clipped_by.replace(/_/g, ' ')}`);
    add('attempt', it.attempt);
    add('parent', it.parent_name ?? (it.parent_span_id ? `${it.parent_span_id} (not in the trace)` : 'none'));
    if (it.span_id) add('span id', it.span_id);
    if (it.note) add('note', it.note);
    details.append(f2, el('pre', { class: 'trace-attrs', 'data-testid': 'trace-attrs' }, JSON.stringify(it.attrs, null, 2)));
    // a [P]/[D] segment built from a recorded sglang_pd_* span: that span as slime recorded it
    const rec = it.recorded !== undefined ? d.items[it.recorded] : undefined;
    if (rec) {
      details.append(el('h4', {}, `recorded as ${rec.name}`));
      const f3 = el('dl', { 'data-testid': 'trace-recorded-facts' });
      const add3 = (k: string, v: string): void => void f3.append(el('dt', {}, k), el('dd', {}, v));
      if (rec.span_id) add3('span id', rec.span_id);
      add3('recorded', `${fmtRel(rec.start - answer.t0)} to ${rec.end === null ? '—' : fmtRel(rec.end - answer.t0)}`);
      if (rec.note) add3('note', rec.note);
      details.append(f3, el('pre', { class: 'trace-attrs' }, JSON.stringify(rec.attrs, null, 2)));
    }
  }

  scroller.addEventListener('scroll', schedule);
  const onResize = (): void => schedule();
  window.addEventListener('resize', onResize);
  canvas.addEventListener('mousedown', (e) => {
    const r = canvas.getBoundingClientRect();
    const px = e.clientX - r.left;
    if (px > LABEL_W) drag = { x0: px, x1: px };
  });
  window.addEventListener('mousemove', (e) => {
    if (!drag) return;
    drag.x1 = Math.max(LABEL_W, e.clientX - canvas.getBoundingClientRect().left);
    schedule();
  });
  const onUp = (e: MouseEvent): void => {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (Math.abs(d.x1 - d.x0) > 5) {
      const a = timeAt(Math.min(d.x0, d.x1));
      const b = timeAt(Math.max(d.x0, d.x1));
      v0 = a;
      v1 = Math.max(b, a + 1e-6);
      schedule();
      report();
      return;
    }
    const r = canvas.getBoundingClientRect();
    clickAt(e.clientX - r.left, e.clientY - r.top);
  };
  window.addEventListener('mouseup', onUp);
  function clickAt(px: number, py: number): void {
    for (let i = hits.length - 1; i >= 0; i--) {
      const hb = hits[i];
      if (px >= hb.x - 1 && px <= hb.x + hb.w + 1 && py >= hb.y && py <= hb.y + hb.h) {
        showing = showDetails(hb.row, hb.item);
        return;
      }
    }
  }
  canvas.addEventListener('dblclick', () => {
    v0 = globalStart;
    v1 = globalEnd;
    schedule();
    report();
  });
  /** Zooms by `k` (below 1: in) about time `t`. */
  function zoomAt(t: number, k: number): void {
    v0 = t - (t - v0) * k;
    v1 = t + (v1 - t) * k;
    schedule();
  }
  /** Moves the view by `frac` of its width (negative: earlier), no further than the traces reach once zoomed in. */
  function pan(frac: number): void {
    const width = v1 - v0;
    let d = frac * width;
    const lo = Math.min(globalStart, v0);
    const hi = Math.max(globalEnd, v1);
    d = Math.max(lo - v0, Math.min(hi - v1, d));
    v0 += d;
    v1 += d;
    schedule();
  }
  canvas.addEventListener(
    'wheel',
    (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) {
        e.preventDefault();
        zoomAt(timeAt(e.clientX - canvas.getBoundingClientRect().left), e.deltaY < 0 ? 0.8 : 1.25);
        wheelReport();
        return;
      }
      // Shift+wheel (which some systems turn into deltaX) or a sideways swipe pans; a plain wheel scrolls the rows.
      const dx = e.shiftKey ? e.deltaX || e.deltaY : Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : 0;
      if (dx === 0) return;
      e.preventDefault();
      const px = e.deltaMode === 1 ? dx * 16 : e.deltaMode === 2 ? dx * canvas.clientWidth : dx;
      pan(px / Math.max(1, canvas.clientWidth - LABEL_W));
      wheelReport();
    },
    { passive: false },
  );
  canvas.addEventListener('keydown', (e) => {
    const step = e.shiftKey ? 0.5 : 0.1;
    if (e.key === 'ArrowLeft') pan(-step);
    else if (e.key === 'ArrowRight') pan(step);
    else if (e.key === '+' || e.key === '=') zoomAt((v0 + v1) / 2, 0.8);
    else if (e.key === '-' || e.key === '_') zoomAt((v0 + v1) / 2, 1.25);
    else return;
    e.preventDefault();
    wheelReport();
  });
  /** Scrolls the chart so the row is in view, and pans (keeping the zoom) when the item lies outside it. */
  function reveal(row: TraceRow, item: TraceItem | null): void {
    const i = rows.indexOf(row);
    if (i < 0) return;
    const h = Math.max(160, scroller.clientHeight);
    const top = scroller.scrollTop;
    if (offsets[i] < top) scroller.scrollTop = offsets[i];
    else if (offsets[i + 1] + AXIS_H - h > top) scroller.scrollTop = offsets[i + 1] + AXIS_H - h;
    if (item && (item.end < v0 || item.start > v1)) {
      const width = v1 - v0;
      v0 = (item.start + item.end) / 2 - width / 2;
      v1 = v0 + width;
    }
  }

  /** Selects by keyboard: what a click on it does, with the chart brought to it. */
  function choose(row: TraceRow, item: TraceItem | null): Promise<void> {
    reveal(row, item);
    return (showing = showDetails(row, item));
  }

  grid.addEventListener('keydown', (e) => {
    const cur = current();
    if (!cur || e.altKey || e.metaKey) return;
    const at = rows.indexOf(cur.row);
    const items = timeOrder(cur.row.items.filter(itemVisible));
    // -1: the sample itself (its header cell)
    const col = cur.item ? items.indexOf(cur.item) : -1;
    /** The item of `row` nearest in time to the current one (the sample itself when on the sample). */
    const near = (row: TraceRow): TraceItem | null => {
      if (!cur.item) return null;
      const t = cur.item.start;
      let best: TraceItem | null = null;
      for (const it of timeOrder(row.items.filter(itemVisible))) if (!best || Math.abs(it.start - t) < Math.abs(best.start - t)) best = it;
      return best;
    };
    const toRow = (i: number): void => {
      const row = rows[Math.max(0, Math.min(rows.length - 1, i))]!;
      void choose(row, near(row));
    };
    if (e.key === 'ArrowDown') toRow(at + 1);
    else if (e.key === 'ArrowUp') toRow(at - 1);
    else if (e.key === 'PageDown') toRow(at + 10);
    else if (e.key === 'PageUp') toRow(at - 10);
    else if (e.key === 'Home' && e.ctrlKey) toRow(0);
    else if (e.key === 'End' && e.ctrlKey) toRow(rows.length - 1);
    else if (e.key === 'ArrowRight') void choose(cur.row, items[Math.min(items.length - 1, col + 1)] ?? null);
    else if (e.key === 'ArrowLeft') void choose(cur.row, col > 0 ? items[col - 1]! : null);
    else if (e.key === 'Home') void choose(cur.row, null);
    else if (e.key === 'End') void choose(cur.row, items.at(-1) ?? null);
    else if (e.key === '+' || e.key === '=' || e.key === '-' || e.key === '_') {
      // zoom about the current item, as Ctrl+wheel does about the pointer
      zoomAt(cur.item ? (cur.item.start + cur.item.end) / 2 : (v0 + v1) / 2, e.key === '+' || e.key === '=' ? 0.8 : 1.25);
      wheelReport();
    } else if (e.key === 'Enter' || e.key === ' ') {
      // the details the click shows, then focus in them (Tab reaches "open sample"; Esc comes back)
      void (selected === cur ? showing : choose(cur.row, cur.item)).then(() => details.querySelector<HTMLElement>('h3')?.focus());
    } else return;
    e.preventDefault();
  });
  grid.addEventListener('focus', () => {
    gridFocused = true;
    scroller.classList.add('keyed');
    syncGrid();
    schedule();
  });
  grid.addEventListener('blur', () => {
    gridFocused = false;
    scroller.classList.remove('keyed');
    schedule();
  });
  aside.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    // Back to the sample list, where the selection is; the app's own Esc (reset a zoom) is not meant here.
    e.preventDefault();
    e.stopPropagation();
    grid.focus();
  });
  fit.onclick = () => {
    v0 = globalStart;
    v1 = globalEnd;
    schedule();
    report();
  };
  // Wheel zoom arrives in bursts: the state is told once it settles.
  let wheelTimer: ReturnType<typeof setTimeout> | undefined;
  const wheelReport = (): void => {
    clearTimeout(wheelTimer);
    wheelTimer = setTimeout(report, 250);
  };
  for (const c of [search, status, attempt, nameSel, sort, desc]) c.addEventListener('input', refilter);
  timeMode.addEventListener('input', () => {
    syncGrid();
    schedule();
  });
  refilter();
  // Open where the host asks (a permalink): its zoom, and its selected span with the details.
  const start = host.initial;
  if (start?.view && start.view[1] > start.view[0]) {
    v0 = start.view[0];
    v1 = start.view[1];
    schedule();
  }
  if (start?.select) {
    const row = all.find((r) => r.row === start.select!.row);
    if (row) showing = showDetails(row, start.select.item === null ? null : (row.items.find((i) => i.id === start.select!.item) ?? null), false);
  }
  return {
    destroy() {
      window.removeEventListener('resize', onResize);
      window.removeEventListener('mouseup', onUp);
      clearTimeout(wheelTimer);
      if (frame) cancelAnimationFrame(frame);
      root.replaceChildren();
    },
  };
}

/**
 * Styles the explorer needs. Text takes the app's theme variables (dark) where they exist; the fallbacks are the
 * standalone page's own light colours (it has no app stylesheet). Each is at least 4.5:1 on its background.
 */
export const EXPLORER_CSS = `
.trace-explorer{display:flex;flex-direction:column;gap:6px;height:100%;min-height:0;font:13px system-ui,sans-serif;--trace-p:var(--info,#2f6bbd);--trace-d:var(--good,#1b7a45);--trace-orphan:var(--bad,${ORPHAN_COLOR})}
.trace-toolbar{display:flex;flex-wrap:wrap;gap:6px;align-items:center}
.trace-notes{color:var(--warn,#7a5b12);font-size:12px}
.trace-line{display:flex;flex-wrap:wrap;gap:0 16px}
.trace-summary,.trace-said{color:var(--muted,#555);font-size:12px}
.trace-legend{display:flex;flex-wrap:wrap;gap:2px 10px;font-size:11px;color:var(--muted,#555);align-items:center;margin-top:auto;padding-top:8px}
.trace-legend-entry{display:inline-flex;gap:4px;align-items:center}
.trace-swatch{display:inline-block;width:12px;height:10px;box-sizing:border-box;font-size:11px}
.trace-main{position:relative;display:flex;gap:8px;flex:1;min-height:0}
.trace-grid{position:absolute;top:0;left:0;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.trace-scroll.keyed{outline:2px solid var(--accent,#b5502a);outline-offset:-2px}
.trace-details h3:focus-visible{outline:2px solid var(--accent,#b5502a);outline-offset:2px}
.trace-scroll{position:relative;flex:1;overflow:auto;border:1px solid rgba(127,127,127,0.35);min-height:300px}
.trace-scroll canvas{position:sticky;top:0;left:0;display:block}
.trace-scroll canvas:focus{outline:2px solid var(--accent,#b5502a);outline-offset:-2px}
.trace-spacer{width:1px}
.trace-details{display:flex;flex-direction:column;width:340px;overflow:auto;border:1px solid rgba(127,127,127,0.35);padding:6px 10px;font-size:12px}
.trace-details dl{display:grid;grid-template-columns:auto 1fr;gap:2px 8px;margin:4px 0}
.trace-details dt{color:var(--muted,#555)}.trace-details dd{margin:0;word-break:break-all}
.trace-attrs{white-space:pre-wrap;word-break:break-all;background:rgba(127,127,127,0.12);color:inherit;padding:6px;max-height:50vh;overflow:auto}
`;
