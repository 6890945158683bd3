// Layer: fleet phase composition — per time bucket, the share of all lanes in each phase, stacked to 100 %.
import { phaseColor } from '../../../theme.ts';
import type { Fleet } from '../../../../src/wire/index.ts';

export function drawComposition(ctx: CanvasRenderingContext2D, fleet: Fleet, x: number, y: number, w: number, h: number): void {
  const n = fleet.x_buckets;
  const names = fleet.palette.filter((p) => p);
  for (let b = 0; b < n; b++) {
    const bx0 = Math.floor(x + (b / n) * w);
    const bx1 = Math.floor(x + ((b + 1) / n) * w);
    let acc = 0;
    for (const name of names) {
      const v = fleet.composition[name]?.[b] ?? 0;
      if (v <= 0) continue;
      const y1 = y + h - acc * h;
      const y0 = y + h - (acc + v) * h;
      ctx.fillStyle = phaseColor(name);
      ctx.fillRect(bx0, Math.floor(y0), Math.max(1, bx1 - bx0), Math.ceil(y1) - Math.floor(y0));
      acc += v;
    }
  }
}
