// The collector's engine_series and phases columns: written for the hours it wrote from their first byte,
// the growing hour at most once a minute, only the growing hour held in memory, none after a restart mid-hour.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { columnsFile, engineSampleLine, phaseLine } from '../formats/dashboard/index.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { Collector } from './collector.ts';
import { CollectorHourColumns } from '../formats/columns/hourColumnsWriter.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-collect-columns-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const H = 997200; // 1970-01-12 13:00 UTC

const engine = (from: number, to: number): string => {
  let out = '';
  for (let s = from; s < to; s += 2) for (const m of ['sglang_num_running_reqs', 'sglang_token_usage']) out += engineSampleLine(H + s + 0.5, 'http://e:1', m, '{"dp_rank": "0"}', s % 17) + '\n';
  return out;
};
const phase = (t0: number, t1: number, rank: number): string => phaseLine({ name: 'actor_train', t0: H + t0, t1: t1 === -1 ? -1 : H + t1, node: 'n1', gpus: [rank], rank, role: 'train' }) + '\n';

/** The rows a store reads, with how many it parsed from JSONL. */
function rows(dir: string): { engine: unknown[]; phases: unknown[]; parsed: number } {
  const s = TelemetryStore.open(dir, { parseWorkers: 0 });
  const engineRows = s.engineSeriesBlocks().flatMap((b) => Array.from({ length: b.length }, (_, i) => [b.ts[i], s.engineSeries.key(b.series[i]).metric, b.value[i]]));
  return { engine: engineRows, phases: s.phaseEvents(), parsed: s.stats().engine_series.rowsParsed + s.stats().phases.rowsParsed };
}

/** The same rows read from the JSONL alone (a copy without the columns files). */
function rawRows(dir: string): { engine: unknown[]; phases: unknown[] } {
  const copy = `${dir}-raw`;
  rmSync(copy, { recursive: true, force: true });
  cpSync(dir, copy, { recursive: true, filter: (src) => !src.endsWith('.rlc') });
  const { engine: e, phases: p } = rows(copy);
  return { engine: e, phases: p };
}

describe('collector engine_series and phases columns', () => {
  it('writes the newest hour at most once a minute and at the final flush, holding only the growing hour in memory', () => {
    const dir = join(root, `run${n++}`, 'dashboard');
    let clock = H + 100;
    const c = new Collector({ dashboardDir: dir, now: () => clock, log: () => {} });
    const columns = (c as unknown as { sidecars: { columns: Record<string, CollectorHourColumns> } }).sidecars.columns;
    c.ingest('engine_series', engine(0, 1800));
    c.flush();
    const first = readFileSync(join(dir, columnsFile('engine_series', '19700112_13')));
    clock += 30;
    c.ingest('engine_series', engine(1800, 2400));
    c.flush();
    assert.deepEqual(readFileSync(join(dir, columnsFile('engine_series', '19700112_13'))), first, 'rewritten within a minute');
    clock += 31;
    c.ingest('engine_series', engine(2400, 3700));
    c.flush();
    // the completed hour is written at once and let go; the new one is the only one held
    assert.notDeepEqual(readFileSync(join(dir, columnsFile('engine_series', '19700112_13'))), first);
    assert.deepEqual(columns.engine_series.resident(), ['19700112_14']);
    // a late line for the completed hour: its columns are read back from the file, extended, written again
    clock += 5;
    c.ingest('engine_series', engine(3590, 3592));
    c.ingest('engine_series', engine(3700, 3800));
    c.flush();
    assert.equal(columns.engine_series.reloads, 1);
    assert.deepEqual(columns.engine_series.resident(), ['19700112_14']);
    c.close();
    assert.deepEqual(columns.engine_series.resident(), []);
    const got = rows(dir);
    assert.equal(got.parsed, 0);
    assert.deepEqual({ engine: got.engine, phases: got.phases }, rawRows(dir));
  });

  it('a restarted collector writes none for the hour it did not start and removes the stale one; a line the reader would refuse leaves the hour to the reader', () => {
    const dir = join(root, `run${n++}`, 'dashboard');
    const first = new Collector({ dashboardDir: dir, now: () => H + 1000, log: () => {} });
    first.ingest('engine_series', engine(0, 1000));
    first.ingest('phases', phase(10, 900, 0) + phase(950, -1, 0));
    first.close();
    for (const stream of ['engine_series', 'phases'] as const) assert.ok(existsSync(join(dir, columnsFile(stream, '19700112_13'))));
    const second = new Collector({ dashboardDir: dir, now: () => H + 4000, log: () => {} });
    second.ingest('engine_series', engine(1000, 3700));
    second.ingest('phases', phase(950, 1500, 0) + phase(3590, 3650, 1));
    second.close();
    // the hour both wrote has none (the stale one is gone); the hour the second began has its own
    for (const stream of ['engine_series', 'phases'] as const) {
      assert.ok(!existsSync(join(dir, columnsFile(stream, '19700112_13'))), stream);
      assert.ok(existsSync(join(dir, columnsFile(stream, '19700112_14'))), stream);
    }
    const got = rows(dir);
    assert.deepEqual({ engine: got.engine, phases: got.phases }, rawRows(dir));
    // an interval ending before it starts passes the collector's checks but not the reader's: that hour
    // gets no columns, and the reader parses it (and reports the line) itself
    const third = new Collector({ dashboardDir: dir, now: () => H + 8000, log: () => {} });
    third.ingest('phases', phase(7300, 7400, 0) + phase(7500, 7450, 1));
    third.close();
    assert.ok(!existsSync(join(dir, columnsFile('phases', '19700112_15'))));
    const s = TelemetryStore.open(dir, { parseWorkers: 0 });
    assert.equal(s.phaseEvents().length, 3 + 1 + 1);
    assert.deepEqual(s.warnings().map((w) => `${w.file}:${w.line}`), ['phases/19700112_15.jsonl:2']);
  });
});
