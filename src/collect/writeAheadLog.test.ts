import assert from 'node:assert/strict';
import { appendFileSync, closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it, test } from 'node:test';
import { ParquetFile } from '../formats/parquet.ts';
import { Collector, UNLOGGED_MAX_BATCHES, UNLOGGED_MAX_BYTES } from './collector.ts';
import { createCollectorApp } from './http.ts';
import { nodeCollectorFs, type CollectorFs } from '../formats/dashboard/writer.ts';
import { BATCH_WINDOW, BatchWindow, FORGOTTEN_FILE, MAX_PRODUCERS, nodeWalIo, PRODUCER_IDLE_S, type WalIo } from './writeAheadLog.ts';

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

  it('a late line of a call that is over, replayed after a kill, is left out as before: no step left arriving for ever', async () => {
    const dir = join(freshDir(), 'dashboard');
    const samplesDir = join(dir, '..', 'samples');
    const line = (rolloutId: number, call: string, position: number, count = 3) =>
      JSON.stringify({ rollout_id: rolloutId, evaluation: false, call, count, position, sample: { index: position, response: `${call} ${position}` } });
    const first = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    // step 4 is written by call a-1; step 6 by call c-2, which replaces call c-1 (it stopped mid-step)
    const batches = [
      [line(4, 'a-1', 0), line(4, 'a-1', 1), line(4, 'a-1', 2)],
      [line(6, 'c-1', 0)],
      [line(6, 'c-2', 0), line(6, 'c-2', 1), line(6, 'c-2', 2)],
    ];
    for (const [i, b] of batches.entries()) {
      const r = first.ingest('samples', b.join('\n'), { producer: 'p', seq: i + 1 });
      assert.ok(r.ok);
      await r.durable;
    }
    // a flush: the log's new segment holds none of these lines
    assert.equal(first.flush(), true);
    // late lines of the two calls that are over, in a batch with a line of step 5, which is still arriving
    const late = first.ingest('samples', [line(4, 'a-1', 1), line(6, 'c-1', 1), line(5, 'b-1', 0, 2)].join('\n'), { producer: 'p', seq: 4 });
    assert.ok(late.ok && late.accepted === 1 && late.rejected === 2);
    assert.match(late.problems[0].message, /^call a-1 of rollout_000004\.parquet is over/);
    assert.match(late.problems[1].message, /^call c-1 of rollout_000006\.parquet is over/);
    await late.durable;
    assert.equal(first.health().samples.stepsArriving, 1);
    // killed now: the next collector replays the batch with the late lines
    const logs: string[] = [];
    const second = new Collector({ dashboardDir: dir, log: (l, m) => logs.push(`${l}: ${m}`), writeAheadLog: true });
    assert.equal(second.health().samples.stepsArriving, 1, 'only step 5 is arriving');
    assert.equal(second.samples.held().length, 1);
    assert.equal(second.health().samples.rejected, 2, 'the late lines are left out again');
    assert.deepEqual(readdirSync(samplesDir).sort(), ['rollout_000004.parquet', 'rollout_000005.parquet.pending', 'rollout_000006.parquet']);
    const done = second.ingest('samples', line(5, 'b-1', 1, 2), { producer: 'p', seq: 5 });
    assert.ok(done.ok && done.accepted === 1);
    await done.durable;
    assert.equal(second.health().samples.stepsArriving, 0);
    assert.equal(second.close(), true);
    assert.deepEqual(logs.filter((m) => /stopping with/.test(m)), []);
    assert.deepEqual(readdirSync(samplesDir).sort(), ['rollout_000004.parquet', 'rollout_000005.parquet', 'rollout_000006.parquet']);
    // and after a clean stop and start too (the calls that are over are in the segment the last flush wrote)
    const third = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const again = third.ingest('samples', [line(4, 'a-1', 0), line(5, 'b-1', 0, 2), line(7, 'd-1', 0, 1)].join('\n'), { producer: 'p', seq: 6 });
    assert.ok(again.ok && again.accepted === 1 && again.rejected === 2);
    assert.equal(third.health().samples.stepsArriving, 0);
    assert.equal(third.close(), true);
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

describe('producers forgotten', () => {
  const segment = (dir: string): string => {
    const names = readdirSync(join(dir, 'wal')).filter((f) => f.endsWith('.log'));
    assert.equal(names.length, 1);
    return readFileSync(join(dir, 'wal', names[0]), 'utf8');
  };
  const pLines = (dir: string): string[] => segment(dir).split('\n').filter((l) => l.startsWith('P '));
  const send = async (c: Collector, seq: number, producer = 'old') => {
    const at = seq * 10 + (producer === 'old' ? 0 : 5);
    const r = c.ingest('metrics', body(metric, at, at + 1), { producer, seq });
    if (r.ok) await r.durable;
    return r;
  };

  it('a producer idle for PRODUCER_IDLE_S is forgotten down to its highest number: at or below it a 409 naming it, above it taken, also after restarts', async () => {
    const dir = freshDir();
    let clock = 1_800_000_000;
    const now = () => clock;
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, now });
    for (let seq = 1; seq <= 5; seq++) assert.ok((await send(c, seq)).ok);
    assert.ok((await send(c, 1, 'live')).ok);
    clock += PRODUCER_IDLE_S - 10;
    assert.ok((await send(c, 2, 'live')).ok);
    // a retry counts as seeing the producer too
    const dup = await send(c, 2, 'live');
    assert.ok(dup.ok && dup.duplicate);
    clock += 20;
    assert.equal(c.flush(), true);
    assert.deepEqual(pLines(dir), ['P live -1 1-2']);
    assert.equal(readFileSync(join(dir, 'wal', FORGOTTEN_FILE), 'utf8'), 'old 5\n');
    const refused = await send(c, 3);
    assert.ok(!refused.ok && 'conflict' in refused);
    assert.match(refused.conflict, /^batch old\/3 is at or below 5, the highest batch number of producer old this collector logged before it forgot that producer's numbers/);
    // a fresh number is taken, and the producer is remembered again above its mark
    const fresh = await send(c, 6);
    assert.ok(fresh.ok && !fresh.duplicate && fresh.accepted === 1);
    const below = await send(c, 4);
    assert.ok(!below.ok && 'conflict' in below);
    assert.ok(((await send(c, 6)) as { duplicate: boolean }).duplicate);
    // killed before a flush: the log has old/6 as a batch, the file the mark
    const second = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, now });
    assert.ok(((await send(second, 6)) as { duplicate: boolean }).duplicate);
    const stillBelow = await send(second, 4);
    assert.ok(!stillBelow.ok && 'conflict' in stillBelow);
    assert.equal(second.close(), true);
    // restarted after a clean stop, with old forgotten again
    clock += PRODUCER_IDLE_S + 1;
    const third = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, now });
    clock += PRODUCER_IDLE_S + 1;
    assert.equal(third.flush(), true);
    assert.deepEqual(pLines(dir), []);
    const fourth = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, now });
    for (const seq of [1, 5, 6]) {
      const r = await send(fourth, seq);
      assert.ok(!r.ok && 'conflict' in r && r.conflict.startsWith(`batch old/${seq} is at or below 6,`), `seq ${seq}`);
    }
    assert.ok((await send(fourth, 7)).ok);
    assert.equal(fourth.close(), true);
    // each batch taken once
    assert.deepEqual(lines(dir, 'metrics.jsonl').sort(), [...[1, 2, 3, 4, 5, 6, 7].map((s) => metric(s * 10)), metric(15), metric(25)].sort());
  });

  it('beyond MAX_PRODUCERS the least recently seen are forgotten first, and a flush formats only the windows that changed since the last', async () => {
    const dir = freshDir();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true });
    const sent = [];
    for (let p = 0; p <= MAX_PRODUCERS; p++) sent.push(c.ingest('metrics', body(metric, p, p + 1), { producer: `p${p}`, seq: 1 }));
    await Promise.all(sent.map((r) => (r.ok ? r.durable : null)));
    // p0 is seen again (a retry): p1 is now the least recently seen
    const retry = c.ingest('metrics', body(metric, 0, 1), { producer: 'p0', seq: 1 });
    assert.ok(retry.ok && retry.duplicate);
    const format = BatchWindow.prototype.format;
    let formatted = 0;
    BatchWindow.prototype.format = function (this: BatchWindow) {
      formatted++;
      return format.call(this);
    };
    try {
      assert.equal(c.flush(), true);
      assert.equal(pLines(dir).length, MAX_PRODUCERS);
      assert.ok(!pLines(dir).includes('P p1 -1 1'));
      assert.equal(readFileSync(join(dir, 'wal', FORGOTTEN_FILE), 'utf8'), 'p1 1\n');
      // one producer sends a batch: the next flush formats its window alone
      const one = c.ingest('metrics', body(metric, 5000, 5001), { producer: 'p7', seq: 2 });
      assert.ok(one.ok);
      await one.durable;
      formatted = 0;
      assert.equal(c.flush(), true);
      assert.equal(formatted, 1);
      assert.ok(pLines(dir).includes('P p7 -1 1-2'));
      formatted = 0;
      assert.equal(c.flush(), true);
      assert.equal(formatted, 0);
      assert.equal(pLines(dir).length, MAX_PRODUCERS);
    } finally {
      BatchWindow.prototype.format = format;
    }
    const forgotten = c.ingest('metrics', body(metric, 1, 2), { producer: 'p1', seq: 1 });
    assert.ok(!forgotten.ok && 'conflict' in forgotten && /^batch p1\/1 is at or below 1,/.test(forgotten.conflict));
    const kept = c.ingest('metrics', body(metric, 2, 3), { producer: 'p2', seq: 1 });
    assert.ok(kept.ok && kept.duplicate);
    assert.equal(c.close(), true);
    assert.equal(lines(dir, 'metrics.jsonl').length, MAX_PRODUCERS + 2);
  });

  it('a forgotten-producers file whose last line a kill left half-written: the whole lines count, and later marks are read back', async () => {
    const dir = freshDir();
    let clock = 1_800_000_000;
    const now = () => clock;
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, now });
    for (let seq = 1; seq <= 3; seq++) assert.ok((await send(c, seq, 'a')).ok);
    clock += PRODUCER_IDLE_S + 1;
    assert.equal(c.flush(), true);
    // a kill while marks were appended (the rotation after it had not written its segment)
    appendFileSync(join(dir, 'wal', FORGOTTEN_FILE), 'b 12');
    const second = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, now });
    assert.equal(readFileSync(join(dir, 'wal', FORGOTTEN_FILE), 'utf8'), 'a 3\n');
    assert.ok((await send(second, 1, 'b')).ok, 'the half-written line is not a mark');
    for (let seq = 1; seq <= 4; seq++) await send(second, seq, 'c');
    clock += PRODUCER_IDLE_S + 1;
    assert.equal(second.flush(), true);
    const third = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, now });
    for (const [producer, seq] of [['a', 3], ['b', 1], ['c', 4]] as const) {
      const r = await send(third, seq, producer);
      assert.ok(!r.ok && 'conflict' in r, `${producer}/${seq}`);
    }
    assert.ok((await send(third, 5, 'c')).ok);
    assert.equal(third.close(), true);
  });
});

describe('batches whose log write failed', () => {
  /** The log's next segment cannot be written (a directory stands at its temporary name) until `unblock`. */
  function blockNextSegment(dir: string): () => void {
    const block = join(dir, 'wal', '000000000002.log.tmp');
    mkdirSync(block);
    return () => rmSync(block, { recursive: true });
  }

  it(`at most ${UNLOGGED_MAX_BATCHES} are held while the log keeps failing: then a batch is refused (503) with nothing taken, and each is taken once when the log works`, async () => {
    const dir = freshDir();
    const io = failingFsync();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, walIo: io.walIo });
    const unblock = blockNextSegment(dir);
    const sent = [];
    for (let seq = 1; seq <= UNLOGGED_MAX_BATCHES; seq++) sent.push(c.ingest('metrics', body(metric, seq, seq + 1), { producer: 'p', seq }));
    assert.ok(sent.every((r) => r.ok && r.accepted === 1));
    assert.ok((await Promise.allSettled(sent.map((r) => (r.ok ? r.durable : null)))).every((x) => x.status === 'rejected'));
    const app = createCollectorApp(c, { token: 't' });
    const post = (seq: number) =>
      app.request('/v1/streams/metrics', { method: 'POST', headers: { Authorization: 'Bearer t', 'X-Rlsight-Batch': `p/${seq}` }, body: body(metric, seq, seq + 1) });
    const refused = await post(UNLOGGED_MAX_BATCHES + 1);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.match(((await refused.json()) as { error: string }).error, /keeps failing and 4096 batches \(\d+ bytes\) whose log write failed are held already; nothing of this batch was taken: send it again$/);
    // the first batch sent again is logged again (and fails again), not taken again
    assert.equal((await post(1)).status, 503);
    io.failing = false;
    unblock();
    assert.equal(c.flush(), true);
    assert.equal((await post(1)).status, 200);
    const taken = await post(UNLOGGED_MAX_BATCHES + 1);
    assert.deepEqual([taken.status, await taken.json()], [200, { accepted: 1, rejected: 0 }]);
    assert.equal(c.close(), true);
    assert.deepEqual(lines(dir, 'metrics.jsonl').sort(), Array.from({ length: UNLOGGED_MAX_BATCHES + 1 }, (_, i) => metric(i + 1)).sort());
  });

  it(`at most ${UNLOGGED_MAX_BYTES >> 20} MiB of their bodies are held: then a batch is refused with nothing taken`, async () => {
    const dir = freshDir();
    const io = failingFsync();
    const c = new Collector({ dashboardDir: dir, log: quiet, writeAheadLog: true, walIo: io.walIo });
    const unblock = blockNextSegment(dir);
    // 4 MiB bodies: one record and blank space
    const big = (seq: number) => `${metric(seq)}\n${' '.repeat(4 << 20)}\n`;
    const count = Math.ceil(UNLOGGED_MAX_BYTES / (4 << 20));
    for (let seq = 1; seq <= count; seq++) {
      const r = c.ingest('metrics', big(seq), { producer: 'p', seq });
      assert.ok(r.ok && r.accepted === 1, `seq ${seq}`);
      await assert.rejects(r.durable, /EIO/);
    }
    const refused = c.ingest('metrics', big(count + 1), { producer: 'p', seq: count + 1 });
    assert.ok(!refused.ok && 'unavailable' in refused);
    assert.equal(c.health().streams.metrics.received, count);
    io.failing = false;
    unblock();
    assert.equal(c.flush(), true);
    const taken = c.ingest('metrics', big(count + 1), { producer: 'p', seq: count + 1 });
    assert.ok(taken.ok && taken.accepted === 1);
    await taken.durable;
    assert.equal(c.close(), true);
    assert.equal(lines(dir, 'metrics.jsonl').length, count + 1);
  });
});
