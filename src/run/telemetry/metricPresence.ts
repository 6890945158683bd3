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
    // One buffer for every sampled range: each is scanned before the next is read.
    let scratch: Buffer | undefined;
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
        scratch ??= Buffer.allocUnsafe(MIB);
        const head = this.io.readRange(f.path, 0, Math.min(MIB, f.size), scratch);
        metricNamesIn(head, 0, head.lastIndexOf(10) + 1, names);
        if (f.size > MIB) {
          const from = Math.max(MIB, f.size - MIB);
          const tail = this.io.readRange(f.path, from, f.size - from, scratch);
          metricNamesIn(tail, tail.indexOf(10) + 1, tail.lastIndexOf(10) + 1, names);
        }
        this.sampled.set(f.key, (sample = { size: f.size, names }));
      }
      for (const m of sample.names) out.add(m);
    });
    return [...out].sort(strAsc);
  }
}

const METRIC_KEY = Buffer.from('"metric":"', 'latin1');

/**
 * Adds the metric names of the lines in `buf[start, end)` (decoded like JSON strings). This runs on the
 * start path over megabytes where a few dozen names repeat, so no string is made per line: each name's
 * position is found by the native byte search and compared in place with the names already seen, starting
 * with the one after the last found (a scraper writes its families in the same order every tick). Only a new
 * name is copied out and decoded as UTF-8.
 */
function metricNamesIn(buf: Buffer, start: number, end: number, into: Set<string>): void {
  const seen: Buffer[] = [];
  let next = 0;
  for (let at = buf.indexOf(METRIC_KEY, start); at !== -1 && at < end; at = buf.indexOf(METRIC_KEY, at)) {
    at += METRIC_KEY.length;
    let hit = -1;
    for (let k = 0; k < seen.length; k++) {
      const i = (next + k) % seen.length;
      const name = seen[i]!;
      const n = name.length;
      if (at + n >= end || buf[at + n] !== 34) continue;
      let j = 0;
      while (j < n && buf[at + j] === name[j]) j++;
      if (j === n) {
        hit = i;
        break;
      }
    }
    if (hit !== -1) {
      next = hit + 1;
      at += seen[hit]!.length + 1;
      continue;
    }
    const close = closingQuote(buf, at, end);
    if (close === -1) continue; // cut or corrupt line: a whole read reports it
    const raw = Buffer.from(buf.subarray(at, close));
    seen.push(raw);
    next = seen.length;
    at = close + 1;
    const utf8 = raw.toString('utf8');
    try {
      into.add(utf8.includes('\\') ? (JSON.parse(`"${utf8}"`) as string) : utf8);
    } catch {
      // not a JSON string: the line is corrupt, a whole read reports it
    }
  }
}

/** Where the JSON string whose body starts at `from` ends (its closing quote), or -1 if a line end or `end` comes first. */
function closingQuote(buf: Buffer, from: number, end: number): number {
  for (let i = from; i < end; i++) {
    const c = buf[i];
    if (c === 34) return i;
    if (c === 10) return -1;
    if (c === 92 && buf[++i] === 10) return -1;
  }
  return -1;
}
