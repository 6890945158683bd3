// Which engine metrics a run has, without parsing engine_series: exact for hours whose whole block is
// resident, and for the others the names on the complete lines of the file's first and last MiB (each
// holds whole scrape ticks, and a scraper reports the same families every tick).
import type { EngineSeriesBlock } from './engineSeriesBlock.ts';
import type { EngineSeriesTable } from './interning.ts';
import type { TelemetryIo } from './io.ts';
import { strAsc } from './laneCatalog.ts';
import type { PartitionFile, PartitionReader } from './partitionReader.ts';

const MIB = 1 << 20;
const METRIC_MARK = Buffer.from('"metric":"');

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
    for (const f of reader.files()) {
      const whole = reader.isCached(f.key) ? reader.block(f) : null;
      if (whole !== null) {
        let seen = this.seen.get(whole);
        if (seen === undefined) this.seen.set(whole, (seen = { n: 0, names: new Set() }));
        const series = whole.series;
        for (let i = seen.n; i < whole.length; i++) seen.names.add(this.table.key(series[i]).metric);
        seen.n = whole.length;
        for (const m of seen.names) out.add(m);
        continue;
      }
      let sample = this.sampled.get(f.key);
      if (sample === undefined || sample.size !== f.size) {
        const known = this.persisted(f);
        if (known !== null) {
          this.sampled.set(f.key, (sample = { size: f.size, names: new Set(known) }));
          for (const m of sample.names) out.add(m);
          continue;
        }
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
    }
    return [...out].sort(strAsc);
  }
}

/** Adds the metric names of the lines in `buf[start, end)` (decoded like JSON strings). */
function metricNamesIn(buf: Buffer, start: number, end: number, into: Set<string>): void {
  let at = buf.indexOf(METRIC_MARK, start);
  let last = '';
  while (at >= 0 && at < end) {
    const s = at + METRIC_MARK.length;
    let e = s;
    while (e < end && buf[e] !== 34 && buf[e] !== 10) e += buf[e] === 92 ? 2 : 1;
    if (buf[e] === 34) {
      const raw = buf.toString('utf8', s, e);
      if (raw !== last) {
        try {
          into.add(raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw);
        } catch {
          // not a JSON string: the line is corrupt, a whole read reports it
        }
        last = raw;
      }
    }
    at = buf.indexOf(METRIC_MARK, e);
  }
}
