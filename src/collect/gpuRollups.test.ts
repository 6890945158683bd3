// The collector's rollups: written beside the hours it writes, preferred by the reader while they describe
// the file, brought up to date from the lines appended since, never trusted for a file they do not describe.
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fleet } from '../queries/fleet.ts';
import { heatmap } from '../queries/heatmap.ts';
import { outliers } from '../queries/outliers.ts';
import { gpuRollupFile } from '../formats/dashboard/index.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { Collector } from './collector.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-collect-rollup-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const H = 997200; // 1970-01-12 13:00 UTC

/** gpu_util NDJSON for seconds `[from, to)` of hour `h` (2 nodes × 2 GPUs, a sample every 3 s). */
function samples(h: number, from: number, to: number, salt = 0): string {
  let out = '';
  for (let s = from; s < to; s += 3) {
    for (const node of ['10.0.0.1', '10.0.0.2']) {
      for (let g = 0; g < 2; g++) {
        const util = (s * 7 + g * 31 + node.length + h + salt) % 101;
        out += `${JSON.stringify({ ts: H + h * 3600 + s + 0.5, node, gpu: g, util, mem_mb: 2000 + util, power_w: 100 + g })}\n`;
      }
    }
  }
  return out;
}

function answers(s: TelemetryStore): unknown {
  const [r0, r1] = s.timeRange()!;
  return [[null, null], [r0 + 1000.5, r1 - 333]].map(([t0, t1]) => ({
    fleet: fleet(s, { t0, t1, xBuckets: 77 }),
    heat: Buffer.from(heatmap(s, { metric: 'util', t0, t1, xBuckets: 91 }).values).toString('base64'),
    low: outliers(s, { criterion: 'lowest_util', t0, t1 }),
  }));
}

/** The answers from every raw row (hours handed out without cells). */
function rawAnswers(dir: string): unknown {
  const s = TelemetryStore.open(dir, { parseWorkers: 0 });
  const bare = function* (t0?: number | null, t1?: number | null) {
    for (const h of s.gpuUtilHours(t0, t1)) yield { ...h, cells: null };
  };
  return answers(Object.assign(Object.create(s), { gpuUtilHours: bare }));
}

describe('collector rollups', () => {
  it('the collector rolls up the hours it writes; a server reads them instead of the rows, and equals a pass over every row', () => {
    const dir = join(root, `run${n++}`, 'dashboard');
    const now = H + 7300;
    const c = new Collector({ dashboardDir: dir, now: () => now, log: () => {} });
    assert.equal(c.ingest('gpu_util', samples(0, 0, 1800)).ok, true);
    assert.equal(c.ingest('gpu_util', samples(1, 0, 900)).ok, true);
    c.flush();
    const newest = join(dir, gpuRollupFile('19700112_14'));
    assert.ok(existsSync(join(dir, gpuRollupFile('19700112_13'))));
    const firstWrite = readFileSync(newest);
    // the growing newest hour is rewritten at most once a minute, and at the final flush
    assert.equal(c.ingest('gpu_util', samples(1, 900, 1800)).ok, true);
    c.flush();
    assert.deepEqual(readFileSync(newest), firstWrite);
    assert.equal(c.ingest('gpu_util', samples(1, 1800, 2400)).ok, true);
    c.close();
    assert.notDeepEqual(readFileSync(newest), firstWrite);
    const store = TelemetryStore.open(dir, { parseWorkers: 0 });
    assert.deepEqual(answers(store), rawAnswers(dir));
    assert.deepEqual(store.gpuRollupStats(), { built: 0, loaded: 2 });
    // no hour was parsed whole: cut columns were read as byte ranges of the files
    assert.equal(store.partitions.gpu_util.rowsParsed, 0);
    // the files the reference reads are untouched: only *.jsonl partitions besides rlsight's rollups
    assert.deepEqual(readdirSync(join(dir, 'gpu_util')).sort(), ['19700112_13.cells.rlc', '19700112_13.jsonl', '19700112_14.cells.rlc', '19700112_14.jsonl']);
  });

  it('lines appended after a rollup was written are folded in from its offset; a rollup of another file is ignored', () => {
    const dir = join(root, `run${n++}`, 'dashboard');
    const c = new Collector({ dashboardDir: dir, now: () => H + 3600, log: () => {} });
    c.ingest('gpu_util', samples(0, 0, 1200));
    c.close();
    // more lines arrive (another writer, or the collector between rollup writes)
    appendFileSync(join(dir, 'gpu_util', '19700112_13.jsonl'), samples(0, 1200, 3000));
    const store = TelemetryStore.open(dir, { parseWorkers: 0 });
    assert.deepEqual(answers(store), rawAnswers(dir));
    assert.equal(store.partitions.gpu_util.rowsParsed, 0);
    // a rollup left beside a file it does not describe (the partition replaced) is not used
    const p = join(dir, 'gpu_util', '19700112_13.jsonl');
    const text = samples(0, 0, 3000, 17);
    rmSync(p);
    appendFileSync(p, text);
    const replaced = TelemetryStore.open(dir, { parseWorkers: 0 });
    assert.deepEqual(answers(replaced), rawAnswers(dir));
    assert.equal(replaced.gpuRollupStats().loaded, 0);
  });

  it('a restarted collector appending to an hour it did not start removes that hour’s rollup rather than write a wrong one', () => {
    const dir = join(root, `run${n++}`, 'dashboard');
    const first = new Collector({ dashboardDir: dir, now: () => H + 100, log: () => {} });
    first.ingest('gpu_util', samples(0, 0, 1800));
    first.close();
    assert.ok(existsSync(join(dir, gpuRollupFile('19700112_13'))));
    const second = new Collector({ dashboardDir: dir, now: () => H + 700, log: () => {} });
    second.ingest('gpu_util', samples(0, 1800, 3000));
    second.close();
    assert.ok(!existsSync(join(dir, gpuRollupFile('19700112_13'))));
    const store = TelemetryStore.open(dir, { parseWorkers: 0 });
    assert.deepEqual(answers(store), rawAnswers(dir));
  });
});
