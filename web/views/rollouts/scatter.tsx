// Sample scatter: any two numeric columns, coloured by group, status or mixed version; hover names the sample, click opens it.
import { useRef } from 'preact/hooks';
import { CanvasBox } from '../../components/canvasBox.tsx';
import { hideTip, showTip } from '../../components/tooltip.tsx';
import { fmtNum } from '../../format.ts';
import { markPainted } from '../../paintMarks.ts';
import { CSS, SERIES_COLORS } from '../../theme.ts';
import { fmtTicks, niceTicks } from '../../ticks.ts';
import type { Cell, TableRow as Row } from '../../../src/wire/index.ts';

export type ColorBy = 'group' | 'status' | 'mixed_version' | 'truncated';

const STATUS_COLORS: Record<string, string> = {
  completed: '#2fcf8f',
  truncated: '#ffb347',
  aborted: '#ff6b6b',
  failed: '#ff4f9a',
  pending: '#9b958d',
};

/**
 * One colour per group on screen, none repeated: hues a golden angle apart, lightness alternating,
 * assigned in group order (a fixed 10-colour cycle would repeat from the 11th group).
 */
export function groupPalette(rows: readonly Row[]): Map<number, string> {
  const groups = [...new Set(rows.map((r) => Number(r.group_index ?? 0)))].sort((a, b) => a - b);
  return new Map(groups.map((g, i) => [g, `hsl(${((i * 137.508) % 360).toFixed(1)}, 72%, ${i % 2 ? 50 : 64}%)`]));
}

export function colorOf(row: Row, by: ColorBy, palette?: Map<number, string>): { key: string; color: string } {
  if (by === 'status') {
    const s = String(row.status ?? 'unknown');
    return { key: s, color: STATUS_COLORS[s] ?? '#9aa5b1' };
  }
  if (by === 'mixed_version') {
    const m = row.mixed_version === true;
    return { key: m ? 'spans 2+ weight versions' : 'single version', color: m ? '#ff6b6b' : '#4ea1ff' };
  }
  if (by === 'truncated') {
    const t = row.truncated === true || row.status === 'truncated';
    return { key: t ? 'truncated' : 'not truncated', color: t ? '#ffb347' : '#4ea1ff' };
  }
  const g = Number(row.group_index ?? 0);
  return { key: `group ${g}`, color: palette?.get(g) ?? SERIES_COLORS[((g % SERIES_COLORS.length) + SERIES_COLORS.length) % SERIES_COLORS.length]! };
}

const M = { left: 54, right: 14, top: 10, bottom: 34 };

const num = (v: Cell): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'boolean' ? Number(v) : null);

interface Props {
  rows: Row[];
  x: string;
  y: string;
  colorBy: ColorBy;
  palette: Map<number, string>;
  /** Groups whose rewards do not vary: their points get a ring. */
  zeroStd: ReadonlySet<number>;
  onOpen: (row: Row) => void;
}

/** A value in [-1, 1) fixed per sample, so jittered points stay put across redraws. */
function jitterOf(sampleIndex: number): number {
  const h = Math.imul(sampleIndex ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  return (h % 2000) / 1000 - 1;
}

export function Scatter({ rows, x, y, colorBy, palette, zeroStd, onOpen }: Props) {
  const pts = useRef<{ px: number; py: number; row: Row }[]>([]);
  const canvas = useRef<HTMLCanvasElement | null>(null);

  function draw(ctx: CanvasRenderingContext2D, size: { width: number; height: number }) {
    const w = size.width - M.left - M.right;
    const h = size.height - M.top - M.bottom;
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    const valid: { xv: number; yv: number; row: Row }[] = [];
    for (const r of rows) {
      const xv = num(r[x] ?? null);
      const yv = num(r[y] ?? null);
      if (xv === null || yv === null) continue;
      valid.push({ xv, yv, row: r });
      if (xv < x0) x0 = xv;
      if (xv > x1) x1 = xv;
      if (yv < y0) y0 = yv;
      if (yv > y1) y1 = yv;
    }
    pts.current = [];
    ctx.font = '11px system-ui, sans-serif';
    if (!valid.length) {
      ctx.fillStyle = CSS.muted;
      ctx.textAlign = 'center';
      ctx.fillText(`no sample has both ${x} and ${y}`, size.width / 2, size.height / 2);
      return;
    }
    // Pad the domain so edge points are fully visible.
    const px = (x1 - x0 || Math.abs(x0) || 1) * 0.05;
    const py = (y1 - y0 || Math.abs(y0) || 1) * 0.08;
    x0 -= px; x1 += px; y0 -= py; y1 += py;
    const sx = (v: number) => M.left + ((v - x0) / (x1 - x0)) * w;
    const sy = (v: number) => M.top + h - ((v - y0) / (y1 - y0)) * h;
    const xInt = valid.every((p) => Number.isInteger(p.xv));
    const yInt = valid.every((p) => Number.isInteger(p.yv));
    ctx.strokeStyle = CSS.grid;
    ctx.fillStyle = CSS.axis;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    const yTicks = niceTicks(y0, y1, 5, yInt);
    fmtTicks(yTicks).forEach((label, i) => {
      const yy = Math.round(sy(yTicks[i]!)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(M.left, yy);
      ctx.lineTo(M.left + w, yy);
      ctx.stroke();
      ctx.fillText(label, M.left - 6, yy);
    });
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    const xTicks = niceTicks(x0, x1, Math.max(3, w / 90), xInt);
    fmtTicks(xTicks).forEach((label, i) => {
      const xx = Math.round(sx(xTicks[i]!)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(xx, M.top);
      ctx.lineTo(xx, M.top + h);
      ctx.stroke();
      ctx.fillText(label, xx, M.top + h + 5);
    });
    ctx.fillStyle = CSS.muted;
    ctx.fillText(x, M.left + w / 2, M.top + h + 19);
    ctx.save();
    ctx.translate(12, M.top + h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(y, 0, -6);
    ctx.restore();
    // A discrete y (binary or few-valued rewards) piles points on a line: spread them a little
    // vertically, never as far as the next value, so overlapping samples stay visible.
    const levels = [...new Set(valid.map((p) => p.yv))].sort((a, b) => a - b);
    const gap = levels.length > 1 ? Math.min(...levels.slice(1).map((v, i) => Math.abs(sy(v) - sy(levels[i]!)))) : h;
    const spread = levels.length <= 6 ? Math.min(9, gap * 0.3) : 0;
    for (const p of valid) {
      const c = colorOf(p.row, colorBy, palette).color;
      const X = sx(p.xv);
      const Y = sy(p.yv) + spread * jitterOf(Number(p.row.sample_index ?? 0));
      ctx.beginPath();
      ctx.arc(X, Y, 4, 0, Math.PI * 2);
      ctx.globalAlpha = 0.75;
      ctx.fillStyle = c;
      ctx.fill();
      ctx.globalAlpha = 1;
      ctx.strokeStyle = c;
      ctx.stroke();
      if (zeroStd.has(Number(p.row.group_index))) {
        ctx.beginPath();
        ctx.arc(X, Y, 7, 0, Math.PI * 2);
        ctx.strokeStyle = CSS.text;
        ctx.stroke();
      }
      pts.current.push({ px: X, py: Y, row: p.row });
    }
    markPainted('rollouts');
  }

  function nearest(e: MouseEvent) {
    const c = canvas.current;
    if (!c) return null;
    const r = c.getBoundingClientRect();
    const mx = e.clientX - r.left;
    const my = e.clientY - r.top;
    let best: { d: number; row: Row } | null = null;
    for (const p of pts.current) {
      const d = (p.px - mx) ** 2 + (p.py - my) ** 2;
      if (d < 100 && (!best || d < best.d)) best = { d, row: p.row };
    }
    return best?.row ?? null;
  }

  return (
    <CanvasBox
      height={300}
      draw={draw}
      canvasRef={canvas}
      label={`scatter of ${y} against ${x}`}
      data-testid="scatter"
      onMouseMove={(e) => {
        const row = nearest(e);
        if (!row) {
          hideTip();
          if (canvas.current) canvas.current.style.cursor = 'default';
          return;
        }
        if (canvas.current) canvas.current.style.cursor = 'pointer';
        const sameXY = rows.filter((r) => r[x] === row[x] && r[y] === row[y]).length;
        showTip(e.clientX, e.clientY, [
          `sample ${row.sample_index}  (group ${row.group_index})`,
          `${x} = ${fmtNum(row[x])}`,
          `${y} = ${fmtNum(row[y])}`,
          `status: ${row.status ?? '—'}`,
          ...(zeroStd.has(Number(row.group_index)) ? ['its group has zero reward std (no gradient signal)'] : []),
          ...(sameXY > 1 ? [`(${sameXY} samples at this point)`] : []),
          'click = open sample',
        ]);
      }}
      onMouseLeave={hideTip}
      onClick={(e) => {
        const row = nearest(e);
        if (row) {
          hideTip();
          onOpen(row);
        }
      }}
    />
  );
}
