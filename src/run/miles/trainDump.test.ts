// The train-dump join on small hand-built rank files: TP/PP duplicates, CP slices, batch-global fields, mismatches.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Storage, Tensor, type PyValue } from '../../formats/torch/value.ts';
import { DumpInconsistent } from '../errors.ts';
import {
  batchRawRewards,
  firstRawRewards,
  buildTrainRow,
  checkTrainSamples,
  indexShardFile,
  indexTrainFiles,
  rowValue,
  type TrainIndex,
} from './trainDump.ts';
import { readNumbers } from './torchDocument.ts';
import { cpResponseRanges } from '../../formats/miles/cpSplit.ts';

function f32(values: number[]): Tensor {
  const bytes = new Uint8Array(Float32Array.from(values).buffer);
  return new Tensor('float32', [values.length], [1], 0, Storage.fromBytes('0', 'float32', bytes));
}
function i32(values: number[]): Tensor {
  const bytes = new Uint8Array(Int32Array.from(values).buffer);
  return new Tensor('int32', [values.length], [1], 0, Storage.fromBytes('0', 'int32', bytes));
}

interface RowSpec {
  sample: number;
  response: number;
  total: number;
  reward?: number;
  fields?: Record<string, number[] | null>;
}

function rankFile(rank: number, rows: RowSpec[], extra: { cpRank?: number; cpSize?: number; rawReward?: number[] } = {}): PyValue {
  const rd: Record<string, PyValue> = {
    sample_indices: rows.map((r) => r.sample),
    response_lengths: rows.map((r) => r.response),
    total_lengths: rows.map((r) => r.total),
    rewards: rows.map((r) => r.reward ?? 0),
    truncated: rows.map(() => 0),
    loss_masks: rows.map((r) => i32(new Array(r.response).fill(1))),
  };
  const names = new Set(rows.flatMap((r) => Object.keys(r.fields ?? {})));
  for (const n of names) rd[n] = rows.map((r) => (r.fields?.[n] ? f32(r.fields[n]!) : null));
  if (extra.rawReward) rd.raw_reward = extra.rawReward;
  const top: Record<string, PyValue> = { rollout_id: 0, rank, rollout_data: rd, qkv_format: 'thd' };
  if (extra.cpRank !== undefined) {
    top.cp_rank = extra.cpRank;
    top.cp_size = extra.cpSize ?? 1;
  }
  return top;
}

async function join(values: PyValue[]): Promise<{ index: TrainIndex; reads: string[]; row: (s: number, raw?: PyValue | null) => ReturnType<typeof buildTrainRow> }> {
  const source = { path: '/nowhere', root: null, littleEndian: true };
  const shards = await Promise.all(values.map((v, rank) => indexShardFile(v, `train_data/0_${rank}.pt`, source, rank)));
  const index = indexTrainFiles(shards);
  const reads: string[] = [];
  const read = async (file: number, row: number, field: Parameters<typeof rowValue>[1]) => {
    reads.push(`${file}:${row}:${field}`);
    return readNumbers(rowValue(shards[file], field, row));
  };
  return { index, reads, row: (s) => buildTrainRow(index, s, read) };
}

const seq = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));

describe('train dump join', () => {
  it('keeps the lowest TP rank and never reads a duplicate rank', async () => {
    const lp = seq(4, (i) => -i / 8);
    const shard0 = [{ sample: 1, response: 4, total: 6, reward: 0.5, fields: { log_probs: lp, rollout_log_probs: lp } }];
    const dup0 = [{ sample: 1, response: 4, total: 6, reward: 0.5, fields: { log_probs: lp.map((x) => x - 1), rollout_log_probs: lp } }];
    const shard1 = [{ sample: 2, response: 4, total: 5, fields: { log_probs: lp, rollout_log_probs: lp } }];
    const j = await join([rankFile(0, shard0), rankFile(1, dup0), rankFile(2, shard1), rankFile(3, shard1)]);
    const a = (await j.row(1))!;
    const b = (await j.row(2))!;
    assert.equal(a.rank, 0);
    assert.equal(b.rank, 2);
    assert.deepEqual(Array.from(a.logProbs!), Array.from(Float32Array.from(lp)));
    assert.ok(j.reads.every((r) => r.startsWith('0:') || r.startsWith('2:')), `read duplicates: ${j.reads}`);
    assert.equal(a.alignmentFailed, false);
  });

  it('takes pipeline-stage fields from the stage that has them', async () => {
    const lp = seq(3, (i) => -i);
    const first = [{ sample: 5, response: 3, total: 5, fields: { rollout_log_probs: lp, log_probs: null } }];
    const last = [{ sample: 5, response: 3, total: 5, fields: { rollout_log_probs: lp, log_probs: lp.map((x) => x - 0.5) } }];
    const j = await join([rankFile(0, first), rankFile(1, last)]);
    const r = (await j.row(5))!;
    assert.equal(r.rank, 0);
    assert.deepEqual(Array.from(r.logProbs!), [-0.5, -1.5, -2.5]);
  });

  it('reassembles zigzag context-parallel slices', async () => {
    // total 16, response 10, cp 2: rank 0 holds response [7, 10), rank 1 holds [0, 7).
    assert.deepEqual(cpResponseRanges(16, 10, 2, 0), [[7, 10]]);
    assert.deepEqual(cpResponseRanges(16, 10, 2, 1), [[0, 3], [3, 7]]);
    const full = seq(10, (i) => i * 0.5);
    const r0 = [{ sample: 9, response: 10, total: 16, fields: { log_probs: full.slice(7), entropy: full.slice(7) } }];
    const r1 = [{ sample: 9, response: 10, total: 16, fields: { log_probs: full.slice(0, 7), entropy: full.slice(0, 7) } }];
    const j = await join([rankFile(0, r0, { cpRank: 0, cpSize: 2 }), rankFile(1, r1, { cpRank: 1, cpSize: 2 })]);
    const r = (await j.row(9))!;
    assert.deepEqual(Array.from(r.logProbs!), full);
    assert.deepEqual(Array.from(r.entropy!), full);
    assert.equal(r.alignmentFailed, false);
  });

  it('infers the CP layout of files that do not record cp_rank', async () => {
    const full = seq(10, (i) => -i / 4);
    const r0 = [{ sample: 9, response: 10, total: 16, fields: { rollout_log_probs: full.slice(7), advantages: full.slice(7) } }];
    const r1 = [{ sample: 9, response: 10, total: 16, fields: { rollout_log_probs: full.slice(0, 7), advantages: full.slice(0, 7) } }];
    const j = await join([rankFile(0, r0), rankFile(1, r1)]);
    const r = (await j.row(9))!;
    assert.deepEqual(Array.from(r.rolloutLogProbs!), full);
    assert.deepEqual(Array.from(r.advantages!), full);
  });

  it('flags a missing CP slice instead of misaligning', async () => {
    const full = seq(10, (i) => i);
    const r0 = [{ sample: 9, response: 10, total: 16, fields: { log_probs: full.slice(7) } }];
    const j = await join([rankFile(0, r0, { cpRank: 0, cpSize: 2 })]);
    const r = (await j.row(9))!;
    assert.equal(r.logProbs, null);
    assert.equal(r.alignmentFailed, true);
  });

  it('nulls a per-token field whose length is not the response length', async () => {
    const rows = [{ sample: 3, response: 4, total: 7, fields: { log_probs: [1, 2, 3], entropy: [0.1, 0.2, 0.3, 0.4] } }];
    const j = await join([rankFile(0, rows)]);
    const r = (await j.row(3))!;
    assert.equal(r.logProbs, null);
    assert.equal(r.entropy!.length, 4);
    assert.equal(r.alignmentFailed, true);
  });

  it('takes the batch-global raw_reward list of the first file carrying one, only at the batch length', async () => {
    const raw = [0.1, 0.2, 0.3, 0.4];
    const a = [{ sample: 12, response: 1, total: 2 }, { sample: 10, response: 1, total: 2 }];
    const b = [{ sample: 13, response: 1, total: 2 }, { sample: 11, response: 1, total: 2 }];
    const j = await join([rankFile(0, a, { rawReward: raw }), rankFile(1, b, { rawReward: raw })]);
    assert.deepEqual(batchRawRewards(firstRawRewards(j.index.files), 4), raw);
    assert.equal(batchRawRewards(firstRawRewards(j.index.files), 5), null, 'a raw_reward of the wrong length is not indexed');
  });

  it('indexes a rank file whose number lists were decoded as typed arrays exactly as one of plain lists', async () => {
    const rows = [{ sample: 12, response: 3, total: 5, reward: 0.5, fields: { log_probs: [-1, -2, -3] } }, { sample: 10, response: 2, total: 4, reward: -0.25 }];
    const raw = [0.1, 0.2, 0.3, 0.4];
    const plain = rankFile(0, rows, { rawReward: raw }) as { rollout_data: Record<string, PyValue> };
    plain.rollout_data.weight_versions = [[3, 4], ['5']];
    const rd = plain.rollout_data;
    const typed = {
      ...plain,
      rollout_data: {
        ...rd,
        sample_indices: Int32Array.from(rd.sample_indices as number[]),
        response_lengths: Int32Array.from(rd.response_lengths as number[]),
        total_lengths: Int32Array.from(rd.total_lengths as number[]),
        rewards: Float64Array.from(rd.rewards as number[]),
        truncated: Int32Array.from(rd.truncated as number[]),
        raw_reward: Float64Array.from(raw),
        weight_versions: [Int32Array.of(3, 4), ['5']],
      },
    } as unknown as PyValue;
    const a = await join([plain as PyValue]);
    const b = await join([typed]);
    const { rolloutData: _a, ...shardA } = a.index.files[0];
    const { rolloutData: _b, ...shardB } = b.index.files[0];
    assert.deepEqual({ ...shardB, rawReward: Array.from(shardB.rawReward!) }, shardA);
    assert.deepEqual(shardB.weightVersions, [['3', '4'], ['5']]);
    assert.deepEqual(batchRawRewards(firstRawRewards(b.index.files), 4), raw);
    for (const s of [12, 10]) assert.deepEqual(await b.row(s), await a.row(s));
  });

  it('refuses duplicates that disagree and rows the rollout does not have', async () => {
    const j = await join([rankFile(0, [{ sample: 1, response: 4, total: 6 }]), rankFile(1, [{ sample: 1, response: 5, total: 7 }])]);
    await assert.rejects(j.row(1), (e: unknown) => e instanceof DumpInconsistent && /disagrees/.test((e as Error).message));
    assert.throws(() => checkTrainSamples(j.index, new Set([2])), (e: unknown) => e instanceof DumpInconsistent && /sample_index 1 absent/.test((e as Error).message));
  });

  it('names the file when a required column is missing', async () => {
    await assert.rejects(
      indexShardFile({ rank: 0, rollout_data: { sample_indices: [1] } }, 'train_data/0_0.pt', { path: '/x', root: null, littleEndian: true }, 0),
      (e: unknown) => e instanceof DumpInconsistent && /0_0\.pt.*response_lengths/.test((e as Error).message),
    );
  });
});
