// Layer: a byte matrix (rows × buckets) blitted through a 256-entry colour table, pixel-exact (no smoothing).
export function paletteLut(colors: (string | null)[]): Uint8ClampedArray {
  const lut = new Uint8ClampedArray(256 * 4);
  colors.forEach((c, i) => {
    if (!c) return;
    const n = parseInt(c.slice(1), 16);
    lut.set([(n >> 16) & 255, (n >> 8) & 255, n & 255, 255], i * 4);
  });
  return lut;
}

export function drawRaster(
  ctx: CanvasRenderingContext2D,
  values: Uint8Array,
  rows: number,
  cols: number,
  lut: Uint8ClampedArray,
  x: number,
  y: number,
  w: number,
  h: number,
): void {
  if (!rows || !cols) return;
  const img = new ImageData(cols, rows);
  const px = img.data;
  for (let i = 0; i < rows * cols; i++) {
    const o = values[i]! * 4;
    px[i * 4] = lut[o]!;
    px[i * 4 + 1] = lut[o + 1]!;
    px[i * 4 + 2] = lut[o + 2]!;
    px[i * 4 + 3] = lut[o + 3]!;
  }
  const off = document.createElement('canvas');
  off.width = cols;
  off.height = rows;
  off.getContext('2d')!.putImageData(img, 0, 0);
  ctx.save();
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, x, y, w, h);
  ctx.restore();
}
