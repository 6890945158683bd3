// Sample steps a producer sent in full are always written or said to be unwritable: a value a Parquet copy column
// cannot hold leaves that copy empty, a sample that cannot be encoded is left out of its step, and a step that is
// not written when the collector stops is answered with why (not "did not all arrive" when it did).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Collector } from '../src/collect/collector.ts';
import { SampleSteps } from '../src/collect/sampleSteps.ts';
import { nodeCollectorFs, type CollectorFs } from '../src/formats/dashboard/writer.ts';
import { encodeSampleStep } from '../src/formats/collectedSamplesWrite.ts';
import { ParquetFile } from '../src/formats/parquet.ts';
import { CollectedSamples } from '../src/run/collected/samples.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-sample-values-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshRun = (): string => join(root, `run${n++}`);

const line = (rolloutId: number, position: number, count: number, sample: Record<string, unknown>, call = 'c') =>
  JSON.stringify({ rollout_id: rolloutId, evaluation: false, call, count, position, sample });

describe('collected sample values', () => {
  it('an integer beyond int64 in index, group_index or response_length leaves that copy cell null; the step is written and reads back whole', async () => {
    const run = freshRun();
    const logs: string[] = [];
    const c = new Collector({ dashboardDir: join(run, 'dashboard'), log: (l, m) => logs.push(`${l}: ${m}`), writeAheadLog: true });
    const samples = [
      { index: 0, group_index: 0, response_length: 1e19, response: 'a' },
      { index: 1, group_index: 1e20, response_length: 4, response: 'b' },
      { index: 2 ** 64, group_index: -(2 ** 63), response_length: 2 ** 63, response: 'c' },
    ];
    const body = samples.map((s, i) => line(42, i, 3, s)).join('\n');
    const r = c.ingest('samples', body, { producer: 'p', seq: 1 });
    assert.ok(r.ok && r.accepted === 3);
    await r.durable;
    assert.deepEqual(readdirSync(join(run, 'samples')), ['rollout_000042.parquet'], logs.join('\n'));
    assert.equal(c.samples.writeErrors, 0);
    const file = await ParquetFile.open(join(run, 'samples', 'rollout_000042.parquet'));
    try {
      const rows = await file.readRows(0, file.numRows, ['index', 'group_index', 'response_length']);
      assert.deepEqual(
        rows.map((x) => [x.index, x.group_index, x.response_length]),
        [
          [0n, 0n, null],
          [1n, null, 4n],
          [null, -(2n ** 63n), null],
        ],
      );
    } finally {
      await file.close();
    }
    const dump = await new CollectedSamples(run).dump(42, false);
    assert.deepEqual(
      dump!.samples.map((s) => [s.fields.response_length, s.fields.group_index, s.fields.response]),
      [
        [1e19, 0, 'a'],
        [4, 1e20, 'b'],
        [2 ** 63, -(2 ** 63), 'c'],
      ],
    );
    assert.equal(c.close(), true);
  });

  it('a sample that cannot be encoded is left out of its step with a warning naming it; the rest is written and the step is not left arriving', () => {
    const run = freshRun();
    const logs: string[] = [];
    const fs = { mkdirp: nodeCollectorFs.mkdirp, replace: nodeCollectorFs.replace, remove: nodeCollectorFs.remove, touch: (p: string, t: string) => writeFileSync(p, t) };
    const poisoned: typeof encodeSampleStep = (samples, zstd) => {
      if (samples.some((s) => s.poison === true)) throw new Error('cannot encode poison');
      return encodeSampleStep(samples, zstd);
    };
    const steps = new SampleSteps(run, fs, undefined, (l, m) => logs.push(`${l}: ${m}`), poisoned);
    const r = steps.take([0, 1, 2].map((i) => line(7, i, 3, { index: i, poison: i === 1 })).join('\n'));
    assert.equal(r.accepted, 3);
    assert.deepEqual(readdirSync(join(run, 'samples')), ['rollout_000007.parquet']);
    assert.equal(steps.arrivingSteps(), 0);
    assert.deepEqual(steps.held(), []);
    assert.ok(
      logs.includes('warn: samples/rollout_000007.parquet: left out 1 of the 3 samples of call c, which could not be encoded: position 1 (cannot encode poison); the rest of the step is written'),
      logs.join('\n'),
    );
  });

  it('a step none of whose samples can be encoded is over, and a reader says why at once (not "still being written", not "did not all arrive")', async () => {
    const run = freshRun();
    const logs: string[] = [];
    const fs = { mkdirp: nodeCollectorFs.mkdirp, replace: nodeCollectorFs.replace, remove: nodeCollectorFs.remove, touch: (p: string, t: string) => writeFileSync(p, t) };
    const steps = new SampleSteps(run, fs, undefined, (l, m) => logs.push(`${l}: ${m}`), () => {
      throw new Error('cannot encode');
    });
    steps.take([0, 1].map((i) => line(8, i, 2, { index: i })).join('\n'));
    assert.equal(steps.arrivingSteps(), 0);
    // a collector still running (collector.json there): the answer is final all the same
    mkdirSync(join(run, 'dashboard'));
    writeFileSync(join(run, 'dashboard', 'collector.json'), '{}');
    await assert.rejects(new CollectedSamples(run).dump(8, false), {
      name: 'SlimeDumpError',
      message: "samples/rollout_000008.parquet: its 2 samples arrived, but none of them could be encoded (the collector's log names them) (only its .pending marker is there)",
    });
  });

  it('stopping with a step still arriving says which and how many samples it has, and a reader names what is missing', async () => {
    const run = freshRun();
    const logs: string[] = [];
    const c = new Collector({ dashboardDir: join(run, 'dashboard'), log: (l, m) => logs.push(`${l}: ${m}`), writeAheadLog: true });
    const r = c.ingest('samples', line(3, 0, 2, { index: 0 }, 'p-1'), { producer: 'p', seq: 1 });
    assert.ok(r.ok);
    await r.durable;
    c.close();
    assert.ok(
      logs.includes(
        'warn: stopping with samples/rollout_000003.parquet not written: only 1 of its 2 samples (call p-1) arrived before the collector stopped; its samples are kept in the write-ahead log and the step is written if its other samples arrive at the next start',
      ),
      logs.join('\n'),
    );
    await assert.rejects(new CollectedSamples(run).dump(3, false), {
      message: 'samples/rollout_000003.parquet: only 1 of its 2 samples (call p-1) arrived before the collector stopped (only its .pending marker is there)',
    });
  });

  it('a step whose samples all arrived but whose file could not be written is answered as such after the stop, not as "did not all arrive"', async () => {
    const run = freshRun();
    const logs: string[] = [];
    const fs: CollectorFs = {
      ...nodeCollectorFs,
      replace: (path, tmp, data, mode) => {
        if (path.endsWith('.parquet')) throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
        nodeCollectorFs.replace(path, tmp, data, mode);
      },
    };
    const c = new Collector({ dashboardDir: join(run, 'dashboard'), log: (l, m) => logs.push(`${l}: ${m}`), fs, writeAheadLog: true });
    const r = c.ingest('samples', [0, 1].map((i) => line(5, i, 2, { index: i })).join('\n'), { producer: 'p', seq: 1 });
    assert.ok(r.ok && r.accepted === 2);
    await r.durable;
    assert.equal(c.samples.writeErrors, 1);
    assert.equal(readFileSync(join(run, 'samples', 'rollout_000005.parquet.pending'), 'utf8'), '', 'still retried while the collector runs');
    c.close();
    assert.ok(existsSync(join(run, 'samples', 'rollout_000005.parquet.pending')));
    await assert.rejects(new CollectedSamples(run).dump(5, false), {
      message: 'samples/rollout_000005.parquet: its 2 samples arrived, but writing the step failed (EIO: i/o error) (only its .pending marker is there)',
    });
  });
});
