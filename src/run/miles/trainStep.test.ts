// The one-pass step join against the reference join over the whole index, on rank files written to disk:
// TP duplicates, context-parallel slices split over two ranks, and a sample shared by two distinct files.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fixturePath } from '../../../test/support/fixtures.ts';
import { ZipArchive } from '../../formats/zip.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { saveTorch, type Picklable } from '../../formats/torch/writer.ts';
import { Storage, Tensor } from '../../formats/torch/value.ts';
import { digestTrainRow } from './trainDigest.ts';
import { openTorchDocument } from './torchDocument.ts';
import { buildTrainRow, rowValue, type TrainIndex } from './trainDump.ts';
import { readNumbers } from './torchDocument.ts';
import {
  catalogClaimed,
  joinClaimed,
  storageCatalogOf,
  storageFingerprint,
  TrainStepFiles,
  type JoinedGroup,
  type JoinFailure,
  type JoinHelper,
  type QuickCatalog,
  type RankFileName,
  type StartCatalogHelper,
  type StepCatalog,
} from './trainStep.ts';
import { cpResponseRanges } from '../../formats/miles/cpSplit.ts';

const dir = mkdtempSync(join(tmpdir(), 'rlsight-trainstep-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function f32(values: ArrayLike<number>): Tensor {
  const data = Float32Array.from(values);
  return new Tensor('float32', [data.length], [1], 0, Storage.fromBytes('0', 'float32', new Uint8Array(data.buffer)));
}

interface Row {
  sample: number;
  response: number;
  total: number;
  /** Per-token values over the part of the response this rank holds. */
  part: (field: number) => number[];
  mask: number[];
}

/** `opaque`: the text `sample_indices` also stands elsewhere in the pickle, so it cannot be read from its bytes. */
function rankFile(rank: number, rows: Row[], cp?: { rank: number; size: number }, opaque = false): Picklable {
  const fields = ['log_probs', 'rollout_log_probs', 'entropy', 'ref_entropy', 'advantages', 'returns'];
  const rd: Record<string, Picklable> = {
    sample_indices: rows.map((r) => r.sample),
    response_lengths: rows.map((r) => r.response),
    total_lengths: rows.map((r) => r.total),
    rewards: rows.map((r) => r.sample / 10),
    truncated: rows.map(() => 0),
    loss_masks: rows.map((r) => f32(r.mask)),
    // batch-global, but told apart by rank here: the step's list is the first file's (rank 0's)
    raw_reward: Array.from({ length: 8 }, (_, i) => i / 4 + rank),
  };
  fields.forEach((name, k) => (rd[name] = rows.map((r) => f32(r.part(k)))));
  if (opaque) rd.note = 'sample_indices';
  const top: Record<string, Picklable> = { rollout_id: 0, rank, rollout_data: rd, qkv_format: 'thd' };
  if (cp) Object.assign(top, { cp_rank: cp.rank, cp_size: cp.size });
  return top;
}

const value = (sample: number, field: number, i: number) => Math.sin(sample * 7 + field * 3 + i) * (field === 1 ? 0.9 : 1.1);
const whole = (sample: number, response: number, total: number): Row => ({
  sample,
  response,
  total,
  part: (k) => Array.from({ length: response }, (_, i) => value(sample, k, i)),
  mask: Array.from({ length: response }, (_, i) => (i % 5 === 3 ? 0 : 1)),
});
/** The zigzag slice of a sample that CP rank `r` of 2 stores. */
const slice = (sample: number, response: number, total: number, r: number): Row => {
  const positions = cpResponseRanges(total, response, 2, r).flatMap(([lo, hi]) => Array.from({ length: hi - lo }, (_, j) => lo + j));
  return {
    sample,
    response,
    total,
    part: (k) => positions.map((i) => value(sample, k, i)),
    mask: Array.from({ length: response }, () => 1),
  };
};

async function writeStep(opaque = false): Promise<RankFileName[]> {
  const step = join(dir, 'run');
  mkdirSync(join(step, 'train_data'), { recursive: true });
  const files: [number, Picklable][] = [
    [0, rankFile(0, [whole(0, 12, 20), whole(1, 9, 15)], undefined, opaque)],
    [2, rankFile(2, [slice(2, 16, 24, 0), whole(3, 7, 10)], { rank: 0, size: 2 }, opaque)],
    [3, rankFile(3, [slice(2, 16, 24, 1), whole(4, 5, 9)], { rank: 1, size: 2 }, opaque)],
    [4, rankFile(4, [whole(5, 6, 8), whole(6, 11, 14)], undefined, opaque)],
    // Overlaps rank 4 on sample 6 with other values: a distinct file, so the join must look at both.
    [5, rankFile(5, [whole(7, 4, 6), { ...whole(6, 11, 14), part: (k) => whole(6, 11, 14).part(k).map((v) => v * 2) }], undefined, opaque)],
  ];
  for (const [rank, v] of files) await saveTorch(v, join(step, 'train_data', `0_${rank}.pt`), { root: `0_${rank}` });
  // Rank 1 is a byte-identical TP copy of rank 0.
  copyFileSync(join(step, 'train_data', '0_0.pt'), join(step, 'train_data', '0_1.pt'));
  return [0, 1, 2, 3, 4, 5].map((rank) => ({ name: `train_data/0_${rank}.pt`, rank }));
}

function stepFiles(files: RankFileName[], onDecode?: (name: string) => void): TrainStepFiles {
  const runDir = join(dir, 'run');
  return new TrainStepFiles(runDir, files, 'stamp', (name) => openTorchDocument(join(runDir, name)), async (_n, e) => e as Error, onDecode);
}

async function joinOver(index: TrainIndex, samples: Iterable<number>): Promise<Map<number, ReturnType<typeof digestTrainRow>>> {
  const out = new Map<number, ReturnType<typeof digestTrainRow>>();
  for (const s of samples) {
    const row = await buildTrainRow(index, s, (file, row, field) => readNumbers(rowValue(index.files[file], field, row)));
    if (row) out.set(s, digestTrainRow(row));
  }
  return out;
}

describe('TrainStepFiles.joinAll', () => {
  it('joins in one pass what the whole-index join gives, rows spread over distinct files included', async () => {
    const files = await writeStep();
    const fast = stepFiles(files);
    const { rows, joined: got } = await fast.joinAll(digestTrainRow);

    const reference = stepFiles(files);
    const refIndex = await reference.index();
    const expected = await joinOver(refIndex, refIndex.locations.keys());
    assert.equal(got.size, 8);
    assert.deepEqual(Object.fromEntries(got), Object.fromEntries(expected));
    // The CP sample was reassembled, not flagged; the duplicate rank is reported as its lowest copy.
    assert.equal(got.get(2)!.alignment_failed, false);
    assert.equal(got.get(0)!.dumped_rank, 0);
    // The TP copy shares its twin's rows under its own name.
    assert.equal(rows.files[1].file, 'train_data/0_1.pt');
    assert.deepEqual(rows.files[1].sampleIndices, [0, 1]);
    assert.deepEqual(rows.files.map((f) => f.sampleIndices), refIndex.files.map((f) => f.sampleIndices));
    assert.deepEqual(rows.locations, refIndex.locations);
    assert.deepEqual(rows.rawRewards, Array.from({ length: 8 }, (_, i) => i / 4));
    // A later read of one sample finds it through the directories already read.
    const one = await fast.indexFor(3, 10);
    assert.deepEqual(await joinOver(one, [3]), new Map([[3, expected.get(3)]]));
  });

  it('loads only the row storages the join reads: a second holder of a full-length row is not read', async () => {
    const files = await writeStep();
    const loaded = new Map<string, Set<string>>();
    const loadSync = ZipArchive.prototype.loadSync;
    ZipArchive.prototype.loadSync = function (this: ZipArchive, list, opts) {
      const names = [...list].map((e) => e.name).filter((n) => /\/data\/\d+$/.test(n));
      const set = loaded.get(this.path) ?? new Set<string>();
      for (const n of names) set.add(n);
      loaded.set(this.path, set);
      return loadSync.call(this, list, opts);
    };
    try {
      const { joined } = await stepFiles(files).joinAll(digestTrainRow);
      assert.equal(joined.size, 8);
    } finally {
      ZipArchive.prototype.loadSync = loadSync;
    }
    const count = (rank: number) => loaded.get(join(dir, 'run', 'train_data', `0_${rank}.pt`))?.size ?? 0;
    // Rank 5 holds sample 7 alone (its mask and 6 fields) and sample 6 after rank 4, which is read instead.
    assert.equal(count(5), 7);
    assert.equal(count(4), 14, 'both of its rows are read');
    // The context-parallel sample needs both slices: every row field of ranks 2 and 3.
    assert.equal(count(2), 14);
    assert.equal(count(3), 14);
  });

  /** A helper on this same thread that claims up to `limit` groups at start, then joins them or stops. */
  function helperOf(limit: number, behaviour: 'joins' | 'stops' | 'fails'): JoinHelper<ReturnType<typeof digestTrainRow>> & { claimed: number[] } {
    let done: Promise<{ groups: JoinedGroup<ReturnType<typeof digestTrainRow>>[]; error?: JoinFailure }> = Promise.resolve({ groups: [] });
    const claimed: number[] = [];
    return {
      claimed,
      start(runDir, groups, counter) {
        const mine: typeof groups = [];
        const at: number[] = [];
        while (mine.length < limit) {
          const k = Atomics.add(counter, 0, 1);
          if (k >= groups.length) break;
          mine.push(groups[k]);
          at.push(k);
          claimed.push(k);
        }
        done = (async () => {
          if (behaviour === 'stops') return { groups: [] };
          if (behaviour === 'fails') return { groups: [], error: { i: mine[0].members[0].i, error: Object.assign(new Error('boom'), { code: 'EIO' }) } };
          // What the worker thread runs, over a counter of its own that hands out just the groups claimed above;
          // its answer must survive the trip between threads.
          const r = structuredClone(await joinClaimed(runDir, mine, new Int32Array(new SharedArrayBuffer(4)), digestTrainRow));
          return { ...r, groups: r.groups.map((g) => ({ ...g, g: at[g.g] })) };
        })();
      },
      finished: () => done,
      cancel() {},
    };
  }

  for (const [limit, behaviour] of [[1, 'joins'], [2, 'joins'], [99, 'joins'], [3, 'stops']] as const) {
    it(`shares the groups of files with a helper thread (${behaviour}, up to ${limit} groups) and answers the same`, async () => {
      const files = await writeStep();
      const reference = stepFiles(files);
      const refIndex = await reference.index();
      const expected = await joinOver(refIndex, refIndex.locations.keys());
      const helper = helperOf(limit, behaviour);
      const step = stepFiles(files);
      const { rows, joined: got } = await step.joinAll(digestTrainRow, helper);
      assert.ok(helper.claimed.length > 0, 'the helper took groups');
      assert.deepEqual(Object.fromEntries(got), Object.fromEntries(expected));
      assert.deepEqual(rows.files.map((f) => f.sampleIndices), refIndex.files.map((f) => f.sampleIndices));
      assert.deepEqual(rows.rawRewards, Array.from({ length: 8 }, (_, i) => i / 4));
    });
  }

  for (const opaque of [false, true]) {
    it(`with a helper that claims every group, decodes ${opaque ? 'every distinct file here first when their sample indices cannot be read from their bytes' : 'nothing here: the helper decodes its groups\' files and hands back their raw_reward list with them'}, and answers the same`, async () => {
      const files = await writeStep(opaque);
      const refIndex = await stepFiles(files).index();
      const expected = await joinOver(refIndex, refIndex.locations.keys());
      const decoded: string[] = [];
      const { rows, joined: got } = await stepFiles(files, (name) => decoded.push(name)).joinAll(digestTrainRow, helperOf(99, 'joins'));
      assert.deepEqual(decoded, opaque ? ['train_data/0_0.pt', 'train_data/0_2.pt', 'train_data/0_3.pt', 'train_data/0_4.pt', 'train_data/0_5.pt'] : []);
      assert.deepEqual(Object.fromEntries(got), Object.fromEntries(expected));
      assert.deepEqual(rows.locations, refIndex.locations);
      assert.deepEqual(rows.rawRewards, Array.from({ length: 8 }, (_, i) => i / 4));
    });
  }

  it('stops on a file the helper could not read, naming it', async () => {
    const files = await writeStep();
    const helper = helperOf(1, 'fails');
    await assert.rejects(stepFiles(files).joinAll(digestTrainRow, helper), (e: unknown) => e instanceof Error && /boom/.test((e as Error).message));
  });

  it('opens no byte-identical copy whole: its directory is only visited', async () => {
    const files = await writeStep();
    const opened: string[] = [];
    const openSync = ZipArchive.openSync;
    ZipArchive.openSync = (path, opts) => (opened.push(path.slice(path.lastIndexOf('/') + 1)), openSync.call(ZipArchive, path, opts));
    try {
      assert.equal((await stepFiles(files).joinAll(digestTrainRow)).joined.size, 8);
    } finally {
      ZipArchive.openSync = openSync;
    }
    assert.deepEqual([...new Set(opened)].sort(), ['0_0.pt', '0_2.pt', '0_3.pt', '0_4.pt', '0_5.pt']);
  });

  it('decodes each distinct rank file once, never a byte-identical copy', async () => {
    const files = await writeStep();
    const decoded: string[] = [];
    const { joined } = await stepFiles(files, (name) => decoded.push(name)).joinAll(digestTrainRow);
    assert.equal(joined.size, 8);
    assert.deepEqual(decoded, ['train_data/0_0.pt', 'train_data/0_2.pt', 'train_data/0_3.pt', 'train_data/0_4.pt', 'train_data/0_5.pt']);
  });

  for (const helped of [false, true]) {
    it(`names a damaged file of a group of distinct files (${helped ? 'joined by the helper' : 'joined here'})`, async () => {
      const files = await writeStep();
      // Rank 5 shares sample 6 with rank 4: the local header of one of its row storages is overwritten.
      const path = join(dir, 'run', 'train_data', '0_5.pt');
      const archive = ZipArchive.openSync(path, { wholeFileBelow: 0 });
      const storage = archive.entries.find((e) => /\/data\/\d+$/.test(e.name))!;
      const bytes = readFileSync(path);
      bytes.fill(0, storage.localHeaderOffset, storage.localHeaderOffset + 4);
      writeFileSync(path, bytes);
      const helper = helped ? helperOf(99, 'joins') : undefined;
      await assert.rejects(stepFiles(files).joinAll(digestTrainRow, helper), (e: unknown) => e instanceof Error && /0_5\.pt/.test((e as Error).message));
    });
  }

  it('names the rank file that cannot be read', async () => {
    const files = [...(await writeStep()), { name: 'train_data/0_9.pt', rank: 9 }];
    await assert.rejects(stepFiles(files).joinAll(digestTrainRow), (e: unknown) => e instanceof Error && /0_9\.pt/.test((e as Error).message));
  });
});

describe('storageCatalogOf', () => {
  it('finds the twins a full open of each archive finds, and the same storage sizes, over every rank file of the fixture run', () => {
    const trainDir = fixturePath('miles-demo', 'run', 'train_data');
    const names = readdirSync(trainDir);
    assert.ok(names.length >= 12);
    const scratch = { bytes: new Uint8Array(0), print: new Uint8Array(1) };
    const quick = names.map((name) => storageCatalogOf(join(trainDir, name), scratch)!);
    const full = names.map((name) => ZipArchive.openSync(join(trainDir, name), { wholeFileBelow: 0 }).entries);
    let twins = 0;
    names.forEach((a, i) => {
      assert.ok(quick[i] && quick[i].print !== null, a);
      assert.deepEqual([...quick[i].sizes].sort(), [...new Set(full[i].filter((e) => /\/data\/[^/]+$/.test(e.name)).map((e) => e.size))].sort(), a);
      names.forEach((b, j) => {
        const same = storageFingerprint(full[i]) === storageFingerprint(full[j]);
        if (same && i !== j) twins++;
        assert.equal(quick[i].print === quick[j].print, same, `${a} ${b}`);
      });
    });
    assert.ok(twins > 0, 'the fixture has byte-identical rank files');
  });
});

describe('a step catalog read alongside another thread', () => {
  const helperOf = (take: (paths: string[], listed: boolean[], counter: Int32Array) => Promise<ReadonlyMap<number, QuickCatalog | null>>) => {
    const counters: Int32Array[] = [];
    const start: StartCatalogHelper = (paths, listed) => {
      const counter = new Int32Array(new SharedArrayBuffer(4));
      counters.push(counter);
      return { counter, finished: take(paths, listed, counter) };
    };
    return { start, counters };
  };
  const storeOf = () => {
    const saved: StepCatalog[] = [];
    return { saved, store: { load: async () => null, save: async (c: StepCatalog) => void saved.push(c) } };
  };
  const stepWith = (files: RankFileName[], store: ReturnType<typeof storeOf>['store'], helper: StartCatalogHelper) => {
    const runDir = join(dir, 'run');
    return new TrainStepFiles(runDir, files, 'stamp', (name) => openTorchDocument(join(runDir, name)), async (_n, e) => e as Error, undefined, store, helper);
  };

  it("takes the helper's reads of every directory as the catalog, reading none itself", async () => {
    const files = await writeStep();
    const reference = stepFiles(files);
    const expected = await joinOver(await reference.indexFor(3, 10), [3]);
    const { start } = helperOf(async (paths, listed, counter) => {
      const read = catalogClaimed(paths, listed, counter);
      // what this thread reads of the same files
      const scratch = { bytes: new Uint8Array(0), print: new Uint8Array(1) };
      for (const [k, c] of read) assert.deepEqual(c, storageCatalogOf(paths[k], scratch, listed[k]));
      // marked, to tell them from reads of this thread
      return new Map(read.map(([k, c]) => [k, c && { ...c, source: `helper ${k}` }]));
    });
    const { saved, store } = storeOf();
    const step = stepWith(files, store, start);
    step.prefetch();
    assert.deepEqual(await joinOver(await step.indexFor(3, 10), [3]), expected);
    await step.saved();
    assert.deepEqual(saved.at(-1)!.sources, files.map((_, k) => `helper ${k}`));
    assert.deepEqual(saved.at(-1)!.twinOf, [0, 0, 2, 3, 4, 5]);
  });

  it('reads what the helper declined or took and never delivered, and waits to be needed before reading anything', async () => {
    const files = await writeStep();
    const reference = stepFiles(files);
    const expected = await joinOver(await reference.indexFor(3, 10), [3]);
    let deliver!: () => void;
    const { start, counters } = helperOf(async (paths, listed, counter) => {
      await new Promise<void>((r) => (deliver = r));
      // it takes three files, then stops: the first read, the second declined, the third lost
      const taken = [0, 1, 2].map(() => Atomics.add(counter, 0, 1)).filter((k) => k < paths.length);
      const scratch = { bytes: new Uint8Array(0), print: new Uint8Array(1) };
      return new Map<number, QuickCatalog | null>(taken.slice(0, 2).map((k, n) => [k, n === 0 ? { ...storageCatalogOf(paths[k], scratch, listed[k])!, source: `helper ${k}` } : null]));
    });
    const { saved, store } = storeOf();
    const step = stepWith(files, store, start);
    step.prefetch();
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    assert.equal(counters.length, 1, 'the helper was started');
    assert.equal(counters[0][0], 0, 'nothing read here before the catalog is needed');
    deliver();
    assert.deepEqual(await joinOver(await step.indexFor(3, 10), [3]), expected);
    await step.saved();
    const sources = saved.at(-1)!.sources;
    assert.equal(sources[0], 'helper 0');
    assert.ok(sources.slice(1).every((s) => /^\d+:\d+:/.test(s)), `${sources}`);
    assert.deepEqual(saved.at(-1)!.twinOf, [0, 0, 2, 3, 4, 5]);
  });
});
