import assert from 'node:assert/strict';
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ParquetFile } from '../formats/parquet.ts';
import { Collector } from './collector.ts';
import { nodeCollectorFs, type CollectorFs } from '../formats/dashboard/writer.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-wal-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = (): string => join(root, `run${n++}`);
const quiet = (): void => {};

const H = 1_755_799_200;
const gpu = (i: number): string => `{"ts":${H + i}.5,"node":"10.0.0.1","gpu":${i % 8},"util":${i % 101},"mem_mb":${1000 + i},"power_w":300}`;
const metric = (i: number): string => `{"ts":${H + i}.5,"step_key":"train/step","step":${i},"metrics":{"train/loss":0.5,"train/step":${i}}}`;
const body = (f: (i: number) => string, from: number, to: number): string => Array.from({ length: to - from }, (_, k) => f(from + k)).join('\n') + '\n';

function lines(dir: string, rel: string): string[] {
  const p = join(dir, rel);
  return existsSync(p) ? readFileSync(p, 'utf8').split('\n').filter((l) => l !== '') : [];
}
function gpuLines(dir: string): string[] {
  const d = join(dir, 'gpu_util');
  if (!existsSync(d)) return [];
  return readdirSync(d).filter((f) => f.endsWith('.jsonl')).sort().flatMap((f) => lines(d, f));
}

describe('write-ahead log', () => {
  it('a collector dropped without flushing is replayed by the next one, exactly once', async () => {
    const dir = freshDir();
    const first = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    for (let b = 0; b < 5; b++) {
      const r = first.ingest('metrics', body(metric, b * 100, b * 100 + 100), { producer: 'p1', seq: b + 1 });
      assert.ok(r.ok);
      await r.durable;
    }
    assert.deepEqual(lines(dir, 'metrics.jsonl'), [], 'nothing flushed before the "kill"');
    // the first collector is gone without a flush; a new one on the same directory
    const second = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    assert.deepEqual(lines(dir, 'metrics.jsonl'), Array.from({ length: 500 }, (_, i) => metric(i)));
    // a retry of an acknowledged batch is answered without taking it again, also after the restart
    const again = second.ingest('metrics', body(metric, 0, 100), { producer: 'p1', seq: 3 });
    assert.ok(again.ok && again.duplicate && again.accepted === 0);
    const third = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const retry = third.ingest('metrics', body(metric, 400, 500), { producer: 'p1', seq: 5 });
    assert.ok(retry.ok && retry.duplicate);
    assert.equal(third.close(), true);
    assert.equal(lines(dir, 'metrics.jsonl').length, 500);
  });

  it('a flush killed after some appends is undone and replayed: no record twice, none lost', async () => {
    const dir = freshDir();
    const snapshot = join(root, `killed${n++}`);
    let appends = 0;
    // the disk as it is when the kill lands: after the flush's second append, before its log rotation
    const fs: CollectorFs = {
      ...nodeCollectorFs,
      write: (fd, data) => {
        nodeCollectorFs.write(fd, data);
        if (++appends === 2) cpSync(dir, snapshot, { recursive: true });
      },
    };
    const c = new Collector({ dashboardDir: dir, log: quiet, fs, writeAheadLog: true });
    // an hour boundary inside the batch, so the flush appends to three files
    const r1 = c.ingest('gpu_util', body(gpu, 3000, 4000), { producer: 'p', seq: 1 });
    const r2 = c.ingest('metrics', body(metric, 0, 50), { producer: 'p', seq: 2 });
    assert.ok(r1.ok && r2.ok);
    await Promise.all([r1.durable, r2.durable]);
    assert.equal(c.flush(), true);
    assert.ok(existsSync(snapshot));
    assert.ok(gpuLines(snapshot).length + lines(snapshot, 'metrics.jsonl').length > 0, 'the kill landed after an append');
    const log: string[] = [];
    const restarted = new Collector({ dashboardDir: snapshot, log: (_l, m) => log.push(m), writeAheadLog: true });
    assert.ok(log.some((m) => /cut \d+ bytes a killed collector had appended/.test(m)), log.join('\n'));
    assert.deepEqual(gpuLines(snapshot), Array.from({ length: 1000 }, (_, i) => gpu(3000 + i)));
    assert.deepEqual(lines(snapshot, 'metrics.jsonl'), Array.from({ length: 50 }, (_, i) => metric(i)));
    assert.equal(restarted.close(), true);
  });

  it('ignores the half-written last entry a kill leaves in the log', async () => {
    const dir = freshDir();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const r = c.ingest('metrics', body(metric, 0, 10), { producer: 'p', seq: 1 });
    assert.ok(r.ok);
    await r.durable;
    const seg = readdirSync(join(dir, 'wal')).find((f) => f.endsWith('.log'))!;
    appendFileSync(join(dir, 'wal', seg), `B metrics p 2 500\n${metric(10)}\n`);
    const log: string[] = [];
    new Collector({ dashboardDir: dir, log: (_l, m) => log.push(m), writeAheadLog: true });
    assert.deepEqual(lines(dir, 'metrics.jsonl'), Array.from({ length: 10 }, (_, i) => metric(i)));
    assert.ok(log.some((m) => /ignored \d+ bytes of a write-ahead log entry/.test(m)), log.join('\n'));
  });
});

describe('write-ahead log of samples', () => {
  it('keeps the samples of a step still arriving across a kill, and writes the step once the rest arrive', async () => {
    const dir = join(freshDir(), 'dashboard');
    const line = (position: number) => JSON.stringify({ rollout_id: 3, evaluation: false, call: 'p-1', count: 3, position, sample: { index: position, response: `answer ${position}`, tokens: [1, 2, position] } });
    const first = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const r = first.ingest('samples', `${line(0)}\n${line(1)}\n`, { producer: 'p', seq: 1 });
    assert.ok(r.ok && r.accepted === 2);
    await r.durable;
    const samplesDir = join(dir, '..', 'samples');
    assert.deepEqual(readdirSync(samplesDir), ['rollout_000003.parquet.pending']);
    // the first collector is gone; the next one still holds the two samples and completes the step with the third
    const second = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const r2 = second.ingest('samples', `${line(2)}\n`, { producer: 'p', seq: 2 });
    assert.ok(r2.ok && r2.accepted === 1);
    await r2.durable;
    assert.deepEqual(readdirSync(samplesDir), ['rollout_000003.parquet']);
    const file = await ParquetFile.open(join(samplesDir, 'rollout_000003.parquet'));
    try {
      const rows = await file.readRows(0, file.numRows, ['position', 'response']);
      assert.deepEqual(rows.map((x) => [x.position, x.response]), [[0, 'answer 0'], [1, 'answer 1'], [2, 'answer 2']]);
    } finally {
      await file.close();
    }
    assert.equal(second.close(), true);
  });
});
