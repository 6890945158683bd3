// uPlot in Preact: created once the box has a width, fed new data in place (zoom and cursor survive), resized with its box.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'preact/hooks';
import { useElementWidth } from './canvasBox.tsx';

interface Props {
  /** Options without width/height; a new identity rebuilds the chart. */
  options: Omit<uPlot.Options, 'width' | 'height'>;
  data: uPlot.AlignedData;
  height: number;
  onCreate?: (u: uPlot) => void;
  label: string;
}

export function UPlotChart({ options, data, height, onCreate, label }: Props) {
  const [boxRef, width] = useElementWidth<HTMLDivElement>();
  const plot = useRef<uPlot | null>(null);
  const dataRef = useRef(data);
  dataRef.current = data;

  useEffect(() => {
    const el = boxRef.current;
    if (!el || width <= 0) return;
    const u = new uPlot({ ...options, width, height } as uPlot.Options, dataRef.current, el);
    plot.current = u;
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

  return <div ref={boxRef} class="uplot-box" role="img" aria-label={label} />;
}
