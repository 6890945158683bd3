// SVG layouts of the diff answers: overlaid histograms (both sides over the server's shared bins) and two
// per-token series over the token alignment's columns. Layout only: every number comes from the server.
import { fmtNum, fmtPct } from '../../format.ts';
import type { AlignedStretch, DistributionDiff, RunListing } from '../../../src/wire/index.ts';
import { runColor } from '../../runs.ts';

export const SIDE_COLORS = { a: '#4ea1ff', b: '#ff8a3d' } as const;

export interface SideColors {
  a: string;
  b: string;
}

/**
 * The colours of a diff's sides: across two runs each side takes its run's colour (the one the header, the
 * Metrics lines and the Health board give it); within one run, or when the two runs' colours coincide, the
 * sides' own blue (A) and orange (B).
 */
export function sideColors(served: readonly RunListing[] | null, runA: string | null, runB: string | null): SideColors {
  if (!served || runA === null || runB === null || runA === runB) return SIDE_COLORS;
  const a = runColor(served, runA);
  const b = runColor(served, runB);
  return a === b ? SIDE_COLORS : { a, b };
}

const W = 320;
const H = 120;
const PAD = { l: 34, r: 6, t: 8, b: 18 };

/** Both sides' shares over the server's bins, in the sides' colours (the diff's A/B, or each run's own). */
export function Histogram({ d, colors = SIDE_COLORS }: { d: DistributionDiff; colors?: SideColors }) {
  const n = d.counts_a.length;
  const total = (c: number[]) => Math.max(1, c.reduce((a, b) => a + b, 0));
  // Shares, so two sides of different sizes compare.
  const ta = total(d.counts_a);
  const tb = total(d.counts_b);
  const top = Math.max(1e-9, ...d.counts_a.map((c) => c / ta), ...d.counts_b.map((c) => c / tb));
  const bw = (W - PAD.l - PAD.r) / n;
  const y = (share: number) => PAD.t + (H - PAD.t - PAD.b) * (1 - share / top);
  const bars = (counts: number[], t: number, color: string) =>
    counts.map((c, i) => (c > 0 ? <rect x={PAD.l + i * bw + 0.5} width={Math.max(1, bw - 1)} y={y(c / t)} height={H - PAD.b - y(c / t)} fill={color} fill-opacity="0.45" /> : null));
  const lo = d.edges[0];
  const hi = d.edges[d.edges.length - 1];
  const xOf = (v: number) => PAD.l + ((v - lo) / (hi - lo || 1)) * (W - PAD.l - PAD.r);
  const meanLine = (m: number | null, color: string) => (m === null ? null : <line x1={xOf(m)} x2={xOf(m)} y1={PAD.t} y2={H - PAD.b} stroke={color} stroke-width="1.5" stroke-dasharray="3 2" />);
  return (
    <svg class="histogram" viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={`${d.label} on both sides`} data-metric={d.metric}>
      {bars(d.counts_a, ta, colors.a)}
      {bars(d.counts_b, tb, colors.b)}
      {meanLine(d.a.mean, colors.a)}
      {meanLine(d.b.mean, colors.b)}
      {/* the share axis: each side's bars are its share of its own samples, topped by the larger side's largest bin */}
      <g class="share-axis" data-top-share={top}>
        <line x1={PAD.l} x2={W - PAD.r} y1={y(top)} y2={y(top)} stroke="#55535a" stroke-dasharray="2 3" />
        <line x1={PAD.l} x2={PAD.l} y1={PAD.t} y2={H - PAD.b} stroke="#55535a" />
        <text x={PAD.l - 3} y={y(top) + 3} class="axis" text-anchor="end">
          {fmtPct(top, top < 0.1 ? 1 : 0)}
        </text>
        <text x={PAD.l - 3} y={H - PAD.b} class="axis" text-anchor="end">
          0
        </text>
      </g>
      <line x1={PAD.l} x2={W - PAD.r} y1={H - PAD.b} y2={H - PAD.b} stroke="#55535a" />
      {/* whole numbers (0/1 flags, token counts): their smallest and largest, not the edges half a unit past them */}
      <text x={PAD.l} y={H - 4} class="axis" data-testid="axis-low">
        {fmtNum(d.integral ? lo + 0.5 : lo)}
      </text>
      <text x={W - PAD.r} y={H - 4} class="axis" text-anchor="end" data-testid="axis-high">
        {fmtNum(d.integral ? hi - 0.5 : hi)}
      </text>
    </svg>
  );
}

/**
 * Two per-token series over the alignment's columns: shaded where only one side has tokens (deleted: A's
 * colour, inserted: B's), a strip below naming each stretch, the first divergence marked.
 */
export function TokenSeries(props: { a: (number | null)[]; b: (number | null)[]; divergence: number | null; stretches: readonly AlignedStretch[]; label: string; colors?: SideColors }) {
  const { a, b, divergence, stretches, label, colors = SIDE_COLORS } = props;
  const w = 960;
  const h = 196;
  const plotBottom = h - 34;
  const n = Math.max(a.length, b.length, 1);
  const vals = [...a, ...b].filter((v): v is number => v !== null);
  const lo = vals.length ? Math.min(...vals) : 0;
  const hi = vals.length ? Math.max(...vals) : 1;
  // Column i spans [x(i), x(i + 1)): a stretch of k columns is k units wide.
  const x = (i: number) => 40 + (i / n) * (w - 50);
  const mid = (i: number) => x(i + 0.5);
  const y = (v: number) => 8 + (plotBottom - 8) * (1 - (v - lo) / (hi - lo || 1));
  const path = (s: (number | null)[]) => {
    let d = '';
    let pen = false;
    s.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${mid(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    return d;
  };
  const width = (s: AlignedStretch) => Math.max(s.a_end - s.a_start, s.b_end - s.b_start);
  const fill = (s: AlignedStretch) => (s.kind === 'deleted' ? colors.a : s.kind === 'inserted' ? colors.b : '#55535a');
  return (
    <svg class="token-series" viewBox={`0 0 ${w} ${h}`} width={w} height={h} role="img" aria-label={`${label} per aligned response token, both samples`}>
      {stretches
        .filter((s) => s.kind !== 'same')
        .map((s) => (
          <rect x={x(s.column)} width={Math.max(0.5, x(s.column + width(s)) - x(s.column))} y="4" height={plotBottom - 4} fill={fill(s)} fill-opacity="0.12" />
        ))}
      <text x="2" y="14" class="axis">
        {fmtNum(hi)}
      </text>
      <text x="2" y={plotBottom} class="axis">
        {fmtNum(lo)}
      </text>
      {divergence !== null && <line x1={x(divergence)} x2={x(divergence)} y1="4" y2={plotBottom + 10} stroke="#ff6b6b" stroke-width="1.5" data-divergence={divergence} />}
      <path d={path(a)} fill="none" stroke={colors.a} stroke-width="1.2" data-side="a" />
      <path d={path(b)} fill="none" stroke={colors.b} stroke-width="1.2" data-side="b" />
      <g class="stretch-strip">
        {stretches.map((s) => (
          <rect x={x(s.column)} width={Math.max(0.5, x(s.column + width(s)) - x(s.column))} y={plotBottom + 4} height="6" fill={fill(s)} fill-opacity={s.kind === 'same' ? 0.6 : 0.9} data-kind={s.kind}>
            <title>
              {s.kind === 'same' ? `matched: A ${s.a_start}–${s.a_end - 1}, B ${s.b_start}–${s.b_end - 1}` : s.kind === 'deleted' ? `only in A: ${s.a_start}–${s.a_end - 1}` : `only in B: ${s.b_start}–${s.b_end - 1}`}
            </title>
          </rect>
        ))}
      </g>
      <text x="40" y={h - 4} class="axis">
        0
      </text>
      <text x={w / 2} y={h - 4} class="axis" text-anchor="middle">
        aligned response tokens (grey: both · {colors === SIDE_COLORS ? 'blue: only A · orange: only B' : 'A’s run colour: only A · B’s: only B'})
      </text>
      <text x={w - 10} y={h - 4} class="axis" text-anchor="end">
        {n} columns
      </text>
    </svg>
  );
}
