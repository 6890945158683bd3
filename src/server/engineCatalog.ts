// The engine metric catalog (`/api/meta.engine_metric_keys`) read from the edges of each engine_series
// partition instead of parsing them all: every scrape writes every metric of every engine, so the first
// and last MiB of an hour name what that hour holds. Opening a 5 GB run then reads a few MiB, not 5 GB.
import { closeSync, openSync, readSync } from 'node:fs';
import { ENGINE_MEAN_METRICS, ENGINE_RATE_METRICS } from '../queries/engineSeries.ts';

export const EDGE_BYTES = 1 << 20;
const METRIC_FIELD = /"metric"\s*:\s*"((?:[^"\\]|\\.)*)"/g;

function readSlice(fd: number, position: number, length: number): string {
  const buf = Buffer.alloc(length);
  const n = readSync(fd, buf, 0, length, position);
  return buf.toString('utf8', 0, n);
}

/** Raw metric names found in the head and tail of each file (the whole file when it is small). */
export function sampledRawMetricNames(files: readonly { path: string; size: number }[], edgeBytes = EDGE_BYTES): Set<string> {
  const names = new Set<string>();
  for (const f of files) {
    if (f.size <= 0) continue;
    let fd: number;
    try {
      fd = openSync(f.path, 'r');
    } catch {
      continue; // a partition removed since it was listed names nothing
    }
    try {
      const slices = f.size <= 2 * edgeBytes ? [readSlice(fd, 0, f.size)] : [readSlice(fd, 0, edgeBytes), readSlice(fd, f.size - edgeBytes, edgeBytes)];
      for (const text of slices) {
        for (const m of text.matchAll(METRIC_FIELD)) {
          try {
            names.add(JSON.parse(`"${m[1]}"`) as string);
          } catch {
            /* a name cut by the slice edge */
          }
        }
      }
    } finally {
      closeSync(fd);
    }
  }
  return names;
}

/** The served catalog: raw names minus cumulative ones, plus each derived rate and mean whose inputs exist. */
export function engineCatalog(raw: ReadonlySet<string>): string[] {
  const names = new Set<string>();
  for (const m of raw) if (!/(_total|_sum|_count)$/.test(m)) names.add(m);
  for (const [derived, base] of Object.entries(ENGINE_RATE_METRICS)) if (raw.has(base)) names.add(derived);
  for (const [derived, base] of Object.entries(ENGINE_MEAN_METRICS)) {
    if (raw.has(`${base}_sum`) && raw.has(`${base}_count`)) names.add(derived);
  }
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
