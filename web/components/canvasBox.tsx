// A canvas that only draws once laid out, and redraws on resize and on data change (no blank or stretched bitmaps).
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { HTMLAttributes } from 'preact';

export interface CanvasSize {
  width: number;
  height: number;
}

interface Props extends Omit<HTMLAttributes<HTMLCanvasElement>, 'height' | 'width' | 'ref'> {
  height: number;
  draw: (ctx: CanvasRenderingContext2D, size: CanvasSize) => void;
  canvasRef?: { current: HTMLCanvasElement | null };
  label: string;
}

export function useElementWidth<T extends HTMLElement>(): [{ current: T | null }, number] {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(0);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(Math.floor(el.getBoundingClientRect().width));
    const ro = new ResizeObserver((entries) => {
      const w = Math.floor(entries[0]!.contentRect.width);
      setWidth((old) => (old === w ? old : w));
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width];
}

export function CanvasBox({ height, draw, canvasRef, label, ...rest }: Props) {
  const [boxRef, width] = useElementWidth<HTMLDivElement>();
  const ref = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const c = ref.current;
    if (!c || width <= 0 || height <= 0) return;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(width * dpr);
    c.height = Math.round(height * dpr);
    c.style.width = `${width}px`;
    c.style.height = `${height}px`;
    const ctx = c.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    draw(ctx, { width, height });
  });
  return (
    <div ref={boxRef} class="canvas-box" style={{ height: `${height}px` }}>
      <canvas
        {...rest}
        role="img"
        aria-label={label}
        ref={(el) => {
          ref.current = el;
          if (canvasRef) canvasRef.current = el;
        }}
      />
    </div>
  );
}
