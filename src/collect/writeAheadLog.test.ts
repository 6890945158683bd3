import assert from 'node:assert/strict';
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ParquetFile } from '../formats/parquet.ts';
import { Collector } from './collector.ts';
import { nodeCollectorFs, type CollectorFs } from '../formats/dashboard/writer.ts';
import { BATCH_WINDOW, nodeWalIo, type WalIo } from './writeAheadLog.ts';

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


/** A log whose fsyncs fail (EIO) while `failing`. */
function failingFsync(): { walIo: WalIo; failing: boolean } {
  const io: { walIo: WalIo; failing: boolean } = { failing: true, walIo: nodeWalIo };
  io.walIo = {
    ...nodeWalIo,
    fdatasync: (fd, done) => (io.failing ? done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })) : nodeWalIo.fdatasync(fd, done)),
  };
  return io;
}
describe('batch numbers', () => {
  // a fixed shuffle (a linear congruential generator): the order is the same at every run
  function shuffled(count: number): number[] {
    const xs = Array.from({ length: count }, (_, i) => i + 1);
    let r = 12345;
    for (let i = xs.length - 1; i > 0; i--) {
      r = (r * 1103515245 + 12345) % 2 ** 31;
      const j = r % (i + 1);
      [xs[i], xs[j]] = [xs[j], xs[i]];
    }
    return xs;
  }

  it('batches of one producer sent at once in any order are each taken once; a retry of a logged one is a duplicate, also after a restart', async () => {
    const dir = freshDir();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const order = shuffled(200);
    // ten at a time: each ten arrive while the earlier ones are logged, as concurrent requests do
    const answers = [];
    for (let i = 0; i < order.length; i += 10) {
      const some = order.slice(i, i + 10).map((seq) => c.ingest('metrics', body(metric, seq * 10, seq * 10 + 10), { producer: 'node', seq }));
      await Promise.all(some.map((r) => (r.ok ? r.durable : null)));
      answers.push(...some);
    }
    assert.deepEqual(answers.filter((r) => !r.ok || r.duplicate || r.accepted !== 10), []);
    const retry = c.ingest('metrics', body(metric, 70, 80), { producer: 'node', seq: 7 });
    assert.ok(retry.ok && retry.duplicate && retry.accepted === 0);
    // another stream under a number not used yet is new data
    const other = c.ingest('gpu_util', body(gpu, 0, 5), { producer: 'node', seq: 201 });
    assert.ok(other.ok && !other.duplicate && other.accepted === 5);
    await other.durable;
    // killed without a flush: the next collector replays the log and knows its numbers
    const second = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const expected = Array.from({ length: 2000 }, (_, i) => metric(i + 10)).sort();
    assert.deepEqual(lines(dir, 'metrics.jsonl').sort(), expected);
    for (const seq of [1, 150, 200, 201]) {
      const again = second.ingest('metrics', body(metric, 0, 1), { producer: 'node', seq });
      assert.ok(again.ok && again.duplicate, `seq ${seq}`);
    }
    assert.equal(second.close(), true);
    // after a rotation (the numbers are in the new segment's P lines) and a restart
    const third = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const late = third.ingest('metrics', body(metric, 0, 1), { producer: 'node', seq: 99 });
    assert.ok(late.ok && late.duplicate);
    const fresh = third.ingest('metrics', body(metric, 5000, 5001), { producer: 'node', seq: 202 });
    assert.ok(fresh.ok && !fresh.duplicate && fresh.accepted === 1);
    assert.equal(third.close(), true);
    assert.deepEqual(lines(dir, 'metrics.jsonl').sort(), [...expected, metric(5000)].sort());
  });

  it('a batch numbered below the numbers remembered, and not among them, is refused as a conflict naming it, not dropped as a duplicate', async () => {
    const dir = freshDir();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const sent = [];
    for (let seq = 2; seq <= BATCH_WINDOW * 2; seq++) sent.push(c.ingest('metrics', body(metric, seq, seq + 1), { producer: 'p', seq }));
    await Promise.all(sent.map((r) => (r.ok ? r.durable : null)));
    const old = c.ingest('metrics', body(metric, 1, 2), { producer: 'p', seq: 1 });
    assert.ok(!old.ok && 'conflict' in old);
    assert.match(old.conflict, /^batch p\/1 is older than the last 4096 batch numbers of producer p this collector remembers, and not among them/);
    const recent = c.ingest('metrics', body(metric, 1, 2), { producer: 'p', seq: BATCH_WINDOW * 2 - 10 });
    assert.ok(recent.ok && recent.duplicate);
    assert.equal(c.close(), true);
  });

  it('a batch whose log write failed (answered "send it again") is taken when sent again, once, and replayed once after a kill', async () => {
    const dir = freshDir();
    const io = failingFsync();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, walIo: io.walIo });
    const first = c.ingest('metrics', body(metric, 0, 10), { producer: 'p', seq: 1 });
    assert.ok(first.ok && first.accepted === 10);
    await assert.rejects(first.durable, /EIO/);
    io.failing = false;
    const retry = c.ingest('metrics', body(metric, 0, 10), { producer: 'p', seq: 1 });
    assert.ok(retry.ok && !retry.duplicate && retry.accepted === 10);
    await retry.durable;
    const again = c.ingest('metrics', body(metric, 0, 10), { producer: 'p', seq: 1 });
    assert.ok(again.ok && again.duplicate, 'logged now');
    // killed before a flush: the log holds the batch (twice: the failed entry's bytes, then the retry), replayed once
    const second = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    assert.deepEqual(lines(dir, 'metrics.jsonl'), Array.from({ length: 10 }, (_, i) => metric(i)));
    assert.equal(second.close(), true);
  });

  it('a batch whose log write failed and whose records a flush wrote since is logged by that flush: sent again it is a duplicate', async () => {
    const dir = freshDir();
    const io = failingFsync();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, walIo: io.walIo });
    const first = c.ingest('metrics', body(metric, 0, 10), { producer: 'p', seq: 1 });
    assert.ok(first.ok);
    await assert.rejects(first.durable, /EIO/);
    io.failing = false;
    assert.equal(c.flush(), true);
    const retry = c.ingest('metrics', body(metric, 0, 10), { producer: 'p', seq: 1 });
    assert.ok(retry.ok && retry.duplicate);
    const second = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    assert.deepEqual(lines(dir, 'metrics.jsonl'), Array.from({ length: 10 }, (_, i) => metric(i)));
    assert.ok(second.ingest('metrics', body(metric, 0, 10), { producer: 'p', seq: 1 }).ok);
    assert.equal(second.close(), true);
    assert.equal(lines(dir, 'metrics.jsonl').length, 10);
  });
});
