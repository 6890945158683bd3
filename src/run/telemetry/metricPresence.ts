// Which engine metrics a run has, without parsing engine_series: exact for hours whose whole block is
// resident or persisted, and for the others the names on the complete lines of the file's first and last
// MiB (each holds whole scrape ticks, and a scraper reports the same families every tick). At most
// SAMPLED_HOURS such hours are sampled (the run's first and last two, and hours evenly spaced between), so
// opening a run of days costs what opening a run of hours does; the others count once read or persisted.
import type { EngineSeriesBlock } from '../../formats/columns/engineSeriesBlock.ts';
import type { EngineSeriesTable } from '../../formats/columns/interning.ts';
import type { TelemetryIo } from './io.ts';
import { strAsc } from './laneCatalog.ts';
import type { PartitionFile } from './partitionListing.ts';
import type { PartitionReader } from './partitionReader.ts';

const MIB = 1 << 20;
/** Hours sampled from their raw bytes at most (the rest are named once parsed or persisted). */
export const SAMPLED_HOURS = 8;

/** Which of `n` hours in run order to sample: all when few, else the first and last two and evenly spaced others. */
export function sampledHours(n: number): Set<number> {
  if (n <= SAMPLED_HOURS) return new Set(Array.from({ length: n }, (_, i) => i));
  const picked = new Set([0, 1, n - 2, n - 1]);
  const middle = SAMPLED_HOURS - picked.size;
  for (let k = 1; k <= middle; k++) picked.add(1 + Math.round((k * (n - 3)) / (middle + 1)));
  return picked;
}

export class EngineMetricPresence {
  private readonly sampled = new Map<string, { size: number; names: Set<string> }>();
  private readonly seen = new WeakMap<EngineSeriesBlock, { n: number; names: Set<string> }>();

  constructor(
    private readonly reader: PartitionReader<EngineSeriesBlock>,
    private readonly table: EngineSeriesTable,
    private readonly io: TelemetryIo,
  ) {}

  /** Names a persisted parse of the file records exactly (see PartitionCache), or null. */
  private persisted(f: PartitionFile): string[] | null {
    if (this.reader.diskCache === null && this.reader.runParses === null) return null;
    const st = this.io.stat(f.path);
    return st === null ? null : this.reader.persistedMetricNames(f, st);
  }

  /** Distinct raw metric names, sorted. Never parses a block. */
  names(): string[] {
    const reader = this.reader;
    const out = new Set<string>();
    const files = reader.files();
    const sampleable = sampledHours(files.length);
    files.forEach((f, i) => {
      const whole = reader.isCached(f.key) ? reader.block(f) : null;
      if (whole !== null) {
        let seen = this.seen.get(whole);
        if (seen === undefined) this.seen.set(whole, (seen = { n: 0, names: new Set() }));
        const series = whole.series;
        for (let i = seen.n; i < whole.length; i++) seen.names.add(this.table.key(series[i]).metric);
        seen.n = whole.length;
        for (const m of seen.names) out.add(m);
        return;
      }
      let sample = this.sampled.get(f.key);
      if (sample === undefined || sample.size !== f.size) {
        const known = this.persisted(f);
        if (known !== null) {
          this.sampled.set(f.key, (sample = { size: f.size, names: new Set(known) }));
          for (const m of sample.names) out.add(m);
          return;
        }
        if (!sampleable.has(i)) return;
        const names = new Set<string>();
        const head = this.io.readRange(f.path, 0, Math.min(MIB, f.size));
        metricNamesIn(head, 0, head.lastIndexOf(10) + 1, names);
        if (f.size > MIB) {
          const from = Math.max(MIB, f.size - MIB);
          const tail = this.io.readRange(f.path, from, f.size - from);
          metricNamesIn(tail, tail.indexOf(10) + 1, tail.lastIndexOf(10) + 1, names);
        }
        this.sampled.set(f.key, (sample = { size: f.size, names }));
      }
      for (const m of sample.names) out.add(m);
    });
    return [...out].sort(strAsc);
  }
}

/** A metric name on a line: `"metric":"…"` with JSON string escapes, not crossing a line end. */
const METRIC_RE = /"metric":"((?:[^"\\\n]|\\[^\n])*)"/g;

/**
 * Adds the metric names of the lines in `buf[start, end)` (decoded like JSON strings). The bytes are
 * decoded once and scanned by one regular expression (compiled to machine code): this runs on the start
 * path, before a byte-scanning loop written here would have been optimised.
 */
function metricNamesIn(buf: Buffer, start: number, end: number, into: Set<string>): void {
  if (end <= start) return;
  const text = buf.toString('utf8', start, end);
  let last = '';
  METRIC_RE.lastIndex = 0;
  for (let m = METRIC_RE.exec(text); m !== null; m = METRIC_RE.exec(text)) {
    const raw = m[1]!;
    if (raw === last) continue;
    last = raw;
    try {
      into.add(raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw);
    } catch {
      // not a JSON string: the line is corrupt, a whole read reports it
    }
  }
}
