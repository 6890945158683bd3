// The whole response at a glance, above the token text: the chart's series as a per-pixel min–max band, the colour
// series as a strip of the token colours, loss-masked stretches hatched, and the window shown below marked on it.
// Click or drag moves the window there.
import { useRef, useState } from 'preact/hooks';
import { CanvasBox, type CanvasSize } from '../../components/canvasBox.tsx';
import { hideTip, showTip } from '../../components/tooltip.tsx';
import { fmtNum } from '../../format.ts';
import { CSS } from '../../theme.ts';
import type { TokenStat, TokenView } from '../../../src/wire/index.ts';
import { SCALES, tokenColor } from './tokenColors.ts';
import { overviewColumns, windowAround } from './tokenSlice.ts';

const HEIGHT = 64;
const BAND = { top: 4, height: 38 };
const HEAT = { top: 46, height: 12 };
const LEFT = 0;

interface Props {
  whole: TokenView;
  /** Tokens read so far are `[0, whole.end)`; the sample has `whole.total_len`. */
  done: boolean;
  chartStat: TokenStat | null;
  color: TokenStat | null;
  extent: number;
  /** The window shown below, `[start, end)`, and its size. */
  start: number;
  end: number;
  win: number;
  onMove: (start: number) => void;
}

const mag = (stat: TokenStat | null) => (stat ? (v: number) => Math.abs(SCALES[stat].f(v)) : (v: number) => Math.abs(v));

export function TokenOverview({ whole, done, chartStat, color, extent, start, end, win, onMove }: Props) {
  const total = whole.total_len;
  // the response is what has statistics: the strip spans it (the whole sample when it has no response)
  const from = whole.prompt_len < total ? whole.prompt_len : 0;
  const span = total - from;
  const canvas = useRef<HTMLCanvasElement | null>(null);
  const [drag, setDrag] = useState<number | null>(null);
  const down = useRef<{ x: number; moved: boolean } | null>(null);
  const size = useRef<CanvasSize>({ width: 0, height: HEIGHT });

  const xOf = (pos: number, w: number) => LEFT + ((pos - from) / span) * (w - LEFT);
  const posAt = (clientX: number) => {
    const c = canvas.current;
    if (!c) return from;
    const r = c.getBoundingClientRect();
    const f = Math.max(0, Math.min(1, (clientX - r.left - LEFT) / Math.max(1, r.width - LEFT)));
    return Math.min(total - 1, from + Math.floor(f * span));
  };

  function draw(ctx: CanvasRenderingContext2D, sz: CanvasSize) {
    size.current = sz;
    const w = sz.width;
    const cols = Math.max(1, Math.floor(w - LEFT));
    // the tokens read so far, laid on the whole response's axis
    const loaded = Math.max(0, Math.min(whole.end, total) - from);
    const loadedCols = Math.round((loaded / span) * cols);
    // a column per pixel, or per token when there are fewer tokens than pixels (each then as wide as it gets)
    const n = Math.min(loadedCols, loaded);
    const colW = n > 0 ? loadedCols / n : 1;
    const seen = n > 0 ? columnsFor(n) : null;
    const xAt = (i: number) => LEFT + Math.floor(i * colW);
    const wAt = (i: number) => Math.max(1, LEFT + Math.floor((i + 1) * colW) - xAt(i));
    ctx.fillStyle = '#151517';
    ctx.fillRect(0, 0, w, HEIGHT);
    if (seen && chartStat) {
      const { cols: band, masked } = seen.band;
      // bars from the stat's neutral value (1 for a ratio, else 0) to the column's extremes
      const neutral = chartStat === 'imp_ratio' ? 1 : 0;
      let lo = neutral;
      let hi = neutral;
      for (const c of band) {
        if (!c) continue;
        lo = Math.min(lo, c.min);
        hi = Math.max(hi, c.max);
      }
      if (hi === lo) {
        hi += 1;
        lo -= 1;
      }
      const y = (v: number) => BAND.top + BAND.height - ((v - lo) / (hi - lo)) * BAND.height;
      for (let i = 0; i < band.length; i++) {
        if (masked[i]) {
          for (let x = xAt(i); x < xAt(i) + wAt(i); x++) {
            ctx.fillStyle = (x >> 1) % 2 ? 'rgba(155,149,141,0.28)' : 'rgba(155,149,141,0.12)';
            ctx.fillRect(x, BAND.top, 1, HEAT.top + HEAT.height - BAND.top);
          }
          continue;
        }
        const c = band[i];
        if (!c) continue;
        ctx.fillStyle = '#ff8a3d';
        const y0 = y(Math.max(c.max, neutral));
        ctx.fillRect(xAt(i), y0, wAt(i), Math.max(1, y(Math.min(c.min, neutral)) - y0));
      }
      if (lo < neutral && hi > neutral) {
        ctx.fillStyle = 'rgba(255,255,255,0.18)';
        ctx.fillRect(LEFT, Math.round(y(neutral)), loadedCols, 1);
      }
    }
    if (seen && color) {
      const heat = seen.heat.cols;
      for (let i = 0; i < heat.length; i++) {
        const c = heat[i];
        const bg = c ? tokenColor(color, c.loudest, extent) : undefined;
        if (!bg) continue;
        ctx.fillStyle = bg;
        ctx.fillRect(xAt(i), HEAT.top, wAt(i), HEAT.height);
      }
    }
    if (loadedCols < cols) {
      ctx.fillStyle = 'rgba(255,255,255,0.04)';
      ctx.fillRect(LEFT + loadedCols, 0, cols - loadedCols, HEIGHT);
      ctx.fillStyle = CSS.muted;
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'middle';
      ctx.fillText(`reading tokens ${Math.min(whole.end, total).toLocaleString('en-US')} of ${total.toLocaleString('en-US')}…`, LEFT + loadedCols + 8, HEIGHT / 2);
    }
    // the window: where it is being dragged to, else where it is
    const ws = drag ?? start;
    const we = drag === null ? end : Math.min(total, drag + win);
    const a = Math.max(LEFT, xOf(Math.max(ws, from), w));
    const b = Math.max(a + 2, xOf(Math.max(we, from), w));
    ctx.fillStyle = 'rgba(255,255,255,0.10)';
    ctx.fillRect(a, 0, b - a, HEIGHT - 2);
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(a + 0.75, 0.75, b - a - 1.5, HEIGHT - 3.5);
  }

  function columnsFor(n: number) {
    // the response tokens read so far (the stat arrays start at the prompt's end), in n columns
    const upto: TokenView = { ...whole, start: from, end: Math.min(whole.end, total) };
    return { band: overviewColumns(upto, chartStat, mag(chartStat), n), heat: overviewColumns(upto, color, mag(color), n) };
  }

  const tip = (e: MouseEvent) => {
    const pos = posAt(e.clientX);
    const w = size.current.width - LEFT;
    const per = Math.max(1, Math.ceil(span / Math.max(1, w)));
    const a = Math.max(from, pos - Math.floor(per / 2));
    const b = Math.min(total, a + per);
    const lines = [per > 1 ? `tokens #${a}–#${b - 1}` : `token #${pos}`];
    if (chartStat && pos < whole.end) {
      const arr = whole[chartStat];
      const base = Math.max(whole.start, whole.prompt_len);
      let lo = Infinity;
      let hi = -Infinity;
      for (let p = a; p < b; p++) {
        const x = arr?.[p - base];
        if (x === null || x === undefined || !Number.isFinite(x)) continue;
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
      lines.push(Number.isFinite(lo) ? `${chartStat} ${lo === hi ? fmtNum(lo) : `${fmtNum(lo)} … ${fmtNum(hi)}`}` : `${chartStat}: no value (prompt or loss-masked)`);
    }
    lines.push('click = show these tokens · drag = move the window');
    showTip(e.clientX, e.clientY, lines);
  };

  return (
    <div class="token-overview" data-testid="token-overview" data-start={start} data-end={end}>
      <div class="token-overview-head">
        <span>
          whole response · {from.toLocaleString('en-US')}–{total.toLocaleString('en-US')}
          {chartStat && (
            <>
              {' '}
              · <i class="ov-band" /> {chartStat} (its extremes per pixel)
            </>
          )}
          {color && (
            <>
              {' '}
              · <i class="ov-heat" /> colour: {color}
            </>
          )}{' '}
          · <i class="ov-masked" /> loss-masked · <i class="ov-window" /> the tokens below
        </span>
        <span class="muted">{done ? 'click or drag to move the window' : 'reading the whole sample…'}</span>
      </div>
      <CanvasBox
        height={HEIGHT}
        draw={draw}
        canvasRef={canvas}
        label={`overview of the whole response: ${chartStat ?? 'tokens'} by position, the shown window marked`}
        style={{ cursor: 'pointer', touchAction: 'none' }}
        onPointerDown={(e) => {
          (e.currentTarget as HTMLCanvasElement).setPointerCapture(e.pointerId);
          down.current = { x: e.clientX, moved: false };
          setDrag(windowAround(posAt(e.clientX), win, total));
        }}
        onPointerMove={(e) => {
          if (!down.current) return tip(e);
          hideTip();
          if (Math.abs(e.clientX - down.current.x) > 3) down.current.moved = true;
          setDrag(windowAround(posAt(e.clientX), win, total));
        }}
        onPointerUp={(e) => {
          if (!down.current) return;
          down.current = null;
          const s = windowAround(posAt(e.clientX), win, total);
          setDrag(null);
          onMove(s);
        }}
        onPointerCancel={() => {
          down.current = null;
          setDrag(null);
        }}
        onMouseLeave={hideTip}
      />
    </div>
  );
}
