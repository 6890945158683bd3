// uPlot in Preact: created once the box has a width, fed new data in place (zoom and cursor survive), resized with its box.
// The box takes focus: ←/→, Home/End and PageUp/PageDown move the cursor point by point, and a polite live region says
// the x value and each series' value there, so the numbers are read without a pointer.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useElementWidth } from './canvasBox.tsx';
import { cursorStep, indicesInView, isCursorKey, readoutText } from './chartText.ts';
import { fmtNum } from '../format.ts';

interface Props {
  /** Options without width/height; a new identity rebuilds the chart. */
  options: Omit<uPlot.Options, 'width' | 'height'>;
  data: uPlot.AlignedData;
  height: number;
  onCreate?: (u: uPlot) => void;
  /** The chart's name: what it shows and of which runs. */
  label: string;
  /** A short text summary of the values (the chart's accessible description). */
  summary?: string;
  /** What is said when the keyboard moves the cursor to data index `idx`; by default the x and each shown series' value. */
  readout?: (u: uPlot, idx: number) => string;
  /** Keys of the chart's own (zoom, open the point): returns whether it took the key. */
  onKey?: (e: KeyboardEvent, u: uPlot) => boolean;
  /** Those keys in words, added to the description. */
  keyHint?: string;
}

let descIds = 0;

/** A series' own legend text for a value (its `value` formatter), else the app's number format. */
function valueText(u: uPlot, i: number, idx: number): string | null {
  const v = (u.data[i] as ArrayLike<number | null | undefined>)[idx];
  if (v == null || (typeof v === 'number' && !Number.isFinite(v))) return null;
  const fmt = u.series[i]?.value;
  return typeof fmt === 'function' ? String(fmt(u, v, i, idx)) : fmtNum(v);
}

/** The default readout: the x value, the point's place among the points in view, and every shown series' value. */
export function defaultReadout(u: uPlot, idx: number): string {
  const [i0, i1] = indicesInView(u.data[0], u.scales.x?.min, u.scales.x?.max);
  const series = u.series.slice(1).flatMap((s, k) => (s.show === false ? [] : [{ label: String(s.label ?? `series ${k + 1}`), text: valueText(u, k + 1, idx) }]));
  return readoutText({ label: String(u.series[0]?.label ?? 'x'), text: valueText(u, 0, idx) ?? '—' }, { at: idx - i0 + 1, of: i1 - i0 + 1 }, series);
}

export function UPlotChart({ options, data, height, onCreate, label, summary, readout, onKey, keyHint }: Props) {
  const [boxRef, width] = useElementWidth<HTMLDivElement>();
  const plot = useRef<uPlot | null>(null);
  const dataRef = useRef(data);
  dataRef.current = data;
  const descId = useMemo(() => `chart-desc-${++descIds}`, []);
  /** What the live region says: the point the keyboard moved to. */
  const [said, setSaid] = useState('');
  /** The data index the keyboard put the cursor on (a pointer move takes it over). */
  const keyIdx = useRef<number | null>(null);

  useEffect(() => {
    const el = boxRef.current;
    if (!el || width <= 0) return;
    const u = new uPlot({ ...options, width, height } as uPlot.Options, dataRef.current, el);
    plot.current = u;
    u.over.addEventListener('mousemove', () => (keyIdx.current = null));
    onCreate?.(u);
    return () => {
      u.destroy();
      plot.current = null;
    };
    // Width changes are handled by setSize below; only a new option set rebuilds.
  }, [options, width > 0]);

  useEffect(() => {
    const u = plot.current;
    if (u && width > 0 && (u.width !== width || u.height !== height)) u.setSize({ width, height });
  }, [width, height]);

  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    const xs = u.scales.x;
    const prev = u.data[0];
    // Zoomed = the view leaves part of the old data out (the full view may be padded beyond it).
    const zoomed = xs && xs.min != null && xs.max != null && prev?.length && (xs.min > prev[0]! || xs.max < prev[prev.length - 1]!);
    u.setData(data, !zoomed);
  }, [data]);

  function onKeyDown(e: KeyboardEvent) {
    const u = plot.current;
    if (!u || e.ctrlKey || e.metaKey || e.altKey) return;
    if (onKey?.(e, u)) {
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    if (!isCursorKey(e.key)) return;
    e.preventDefault();
    const xs = u.data[0];
    const [i0, i1] = indicesInView(xs, u.scales.x?.min, u.scales.x?.max);
    // From the keyboard's last point, else the pointer's, else an end of the view.
    const cur = keyIdx.current ?? u.cursor.idx ?? null;
    const idx = cursorStep(e.key, cur !== null && cur >= 0 && cur < xs.length ? cur : null, i0, i1);
    if (idx === null) return setSaid('no points in view');
    keyIdx.current = idx;
    // Half way down the plot: a line's value is read aloud, not picked by height.
    u.setCursor({ left: u.valToPos(xs[idx]!, 'x'), top: u.over.clientHeight / 2 });
    setSaid((readout ?? defaultReadout)(u, idx));
  }

  const description = [summary, 'Arrow keys, Home, End, Page Up and Page Down read the values point by point.', keyHint].filter(Boolean).join(' ');
  return (
    <>
      <div
        ref={boxRef}
        class="uplot-box"
        tabIndex={0}
        role="application"
        aria-roledescription="chart"
        aria-label={label}
        aria-describedby={descId}
        onKeyDown={onKeyDown}
        onBlur={() => {
          // The keyboard's cursor goes with the focus, as the pointer's goes when it leaves.
          const u = plot.current;
          if (u && keyIdx.current !== null) u.setCursor({ left: -10, top: -10 });
          keyIdx.current = null;
        }}
      />
      <p id={descId} class="sr-only" data-testid="chart-summary">
        {description}
      </p>
      <p class="sr-only" aria-live="polite" data-testid="chart-readout">
        {said}
      </p>
    </>
  );
}
