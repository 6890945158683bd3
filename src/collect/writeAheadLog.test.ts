import assert from 'node:assert/strict';
import { appendFileSync, closeSync, cpSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it, test } from 'node:test';
import { ParquetFile } from '../formats/parquet.ts';
import { Collector } from './collector.ts';
import { nodeCollectorFs, type CollectorFs } from '../formats/dashboard/writer.ts';
import { BATCH_WINDOW, BatchWindow, nodeWalIo, type WalIo } from './writeAheadLog.ts';

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
    // killed before a flush: the fresh segment that replaced the failed one holds the batch once
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

  /** A log whose fsyncs wait until the test lets them go (`release`), or fail them (`fail`). */
  function heldFsync(): { walIo: WalIo; release: () => void; fail: () => void; count: () => number } {
    const held: ((err: NodeJS.ErrnoException | null) => void)[] = [];
    let fds: number[] = [];
    const walIo: WalIo = {
      ...nodeWalIo,
      fdatasync: (fd, done) => {
        held.push(done);
        fds.push(fd);
      },
    };
    const go = (failing: boolean): void => {
      const list = held.splice(0);
      const fdList = fds;
      fds = [];
      list.forEach((done, i) => (failing ? done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })) : nodeWalIo.fdatasync(fdList[i], done)));
    };
    return { walIo, release: () => go(false), fail: () => go(true), count: () => held.length };
  }
  const turn = (): Promise<void> => new Promise((res) => setImmediate(res));
  const segments = (dir: string): string[] => readdirSync(join(dir, 'wal')).filter((f) => f.endsWith('.log'));

  it('a flush while a batch is being fsynced keeps its number in the new segment: its retry after a kill is a duplicate', async () => {
    const dir = freshDir();
    const io = heldFsync();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, walIo: io.walIo });
    const r = c.ingest('metrics', body(metric, 0, 5), { producer: 'p', seq: 1 });
    assert.ok(r.ok && r.accepted === 5);
    await turn(); // the group is written, its fsync under way
    assert.equal(io.count(), 1);
    assert.equal(c.flush(), true); // the records go to metrics.jsonl, and the log rotates
    const seg = segments(dir);
    assert.equal(seg.length, 1);
    assert.match(readFileSync(join(dir, 'wal', seg[0]), 'utf8'), /^P p -1 1$/m);
    // the rotation put it on disk (the flush wrote it): acknowledged before its own fsync returns
    await r.durable;
    // killed now; the client, with no answer, sends the batch again to the next collector
    const second = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const retry = second.ingest('metrics', body(metric, 0, 5), { producer: 'p', seq: 1 });
    assert.ok(retry.ok && retry.duplicate && retry.accepted === 0);
    assert.equal(second.close(), true);
    assert.deepEqual(lines(dir, 'metrics.jsonl'), Array.from({ length: 5 }, (_, i) => metric(i)));
    io.release();
  });

  it('a retry of a batch still being fsynced is answered with it: 200 once it is on disk, 503 when its fsync fails', async () => {
    const dir = freshDir();
    const io = heldFsync();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, walIo: io.walIo });
    const r = c.ingest('metrics', body(metric, 0, 5), { producer: 'p', seq: 1 });
    assert.ok(r.ok);
    await turn();
    const again = c.ingest('metrics', body(metric, 0, 5), { producer: 'p', seq: 1 });
    assert.ok(again.ok && again.duplicate && again.accepted === 0);
    let settled = false;
    void again.durable.then(() => (settled = true));
    await turn();
    assert.equal(settled, false, 'not answered before the original is on disk');
    io.release();
    await Promise.all([r.durable, again.durable]);
    assert.equal(settled, true);
    // the same when the fsync fails: both are a 503, and the batch is taken on a later retry, once
    const r2 = c.ingest('metrics', body(metric, 5, 10), { producer: 'p', seq: 2 });
    assert.ok(r2.ok);
    await turn();
    const again2 = c.ingest('metrics', body(metric, 5, 10), { producer: 'p', seq: 2 });
    assert.ok(again2.ok && again2.duplicate);
    io.fail();
    await assert.rejects(r2.durable, /EIO/);
    await assert.rejects(again2.durable, /EIO/);
    const third = c.ingest('metrics', body(metric, 5, 10), { producer: 'p', seq: 2 });
    assert.ok(third.ok);
    await turn();
    io.release();
    await third.durable;
    assert.equal(c.close(), true);
    assert.deepEqual(lines(dir, 'metrics.jsonl'), Array.from({ length: 10 }, (_, i) => metric(i)));
  });

  it('a log write that fails part-way is cut back, and what is acknowledged after it survives a kill', async () => {
    const dir = freshDir();
    let failOnce = true;
    const walIo: WalIo = {
      ...nodeWalIo,
      writeSync: (fd, data, off, len) => {
        if (failOnce && len > 20) {
          failOnce = false;
          nodeWalIo.writeSync(fd, data, off, 20); // the disk fills up after 20 bytes
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        }
        return nodeWalIo.writeSync(fd, data, off, len);
      },
    };
    await failedThenAcknowledged(dir, walIo, /ENOSPC/);
  });

  it('after a failed fsync (its pages lost), batches acknowledged later are in a fresh segment and survive a kill', async () => {
    const dir = freshDir();
    let failOnce = true;
    const walIo: WalIo = {
      ...nodeWalIo,
      fdatasync: (fd, done) => {
        if (!failOnce) return nodeWalIo.fdatasync(fd, done);
        failOnce = false;
        // the kernel drops the pages that failed: the group's bytes read back as zeros
        const path = join(dir, 'wal', segments(dir)[0]);
        const text = readFileSync(path, 'latin1');
        const at = text.indexOf('B metrics p 1 ');
        const other = openSync(path, 'r+');
        writeSync(other, Buffer.alloc(text.length - at), 0, text.length - at, at);
        closeSync(other);
        done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      },
    };
    await failedThenAcknowledged(dir, walIo, /EIO/);
  });
});


/**
 * A batch whose log write fails (`failure`), its retry and a later batch, both acknowledged; then the collector is
 * killed before a flush: the next one has all 8 acknowledged records, once, and knows both batch numbers.
 */
async function failedThenAcknowledged(dir: string, walIo: WalIo, failure: RegExp): Promise<void> {
  const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, walIo });
  const first = c.ingest('metrics', body(metric, 0, 5), { producer: 'p', seq: 1 });
  assert.ok(first.ok);
  await assert.rejects(first.durable, failure);
  const retry = c.ingest('metrics', body(metric, 0, 5), { producer: 'p', seq: 1 });
  assert.ok(retry.ok);
  await retry.durable;
  const other = c.ingest('metrics', body(metric, 100, 103), { producer: 'p', seq: 2 });
  assert.ok(other.ok && other.accepted === 3);
  await other.durable;
  const logs: string[] = [];
  const second = new Collector({ dashboardDir: dir, log: (l, m) => logs.push(`${l}: ${m}`), writeAheadLog: true });
  assert.deepEqual(logs.filter((m) => /ignored/.test(m)), []);
  assert.deepEqual(lines(dir, 'metrics.jsonl').sort(), [...Array.from({ length: 5 }, (_, i) => metric(i)), metric(100), metric(101), metric(102)].sort());
  for (const seq of [1, 2]) {
    const dup = second.ingest('metrics', body(metric, 0, 1), { producer: 'p', seq });
    assert.ok(dup.ok && dup.duplicate, `seq ${seq}`);
  }
  assert.equal(second.close(), true);
}

test('a batch-number line holding more numbers than a window ever does is skipped, not loaded', () => {
  assert.equal(BatchWindow.parse(['0', '1-10000000']), null);
  assert.equal(BatchWindow.parse(['0', `1-${BATCH_WINDOW}`])!.seqs.size, BATCH_WINDOW);
});
