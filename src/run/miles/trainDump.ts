// Train dumps `train_data/{id}_{rank}.pt`: indexing the per-rank shard files and joining one sample's row
// across TP/PP duplicates and CP slices.
import type { PyValue } from '../../formats/torch/value.ts';
import { DumpInconsistent } from '../errors.ts';
import type { TrainTokens } from '../model.ts';
import { asInt, asNumber, asString, field, isDict, isList, scalarReward } from './pyFields.ts';
import { isTypedList, lengthOf, readNumbers, type Numbers } from './torchDocument.ts';
import { cpResponseRanges } from '../../formats/miles/cpSplit.ts';

/** Per-token fields a context-parallel rank stores only its zigzag slice of. */
export const CP_SHARDED_FIELDS = [
  'log_probs',
  'rollout_log_probs',
  'ref_log_probs',
  'entropy',
  'ref_entropy',
  'advantages',
  'returns',
] as const;
export type CpShardedField = (typeof CP_SHARDED_FIELDS)[number];
/** Every per-token field a train row may carry (read from the rank's storage on demand). */
export type TokenField = CpShardedField | 'loss_masks';

/** What one rank file says about its rows, without any per-token storage read. */
export interface TrainShardFile {
  /** Run-relative name, e.g. `train_data/0_1.pt`. */
  file: string;
  /** The decoded `rollout_data` (tensors unread) of the file whose storages back this one's rows. */
  rolloutData: PyValue;
  /**
   * Where the row tensors' bytes are: the archive and its root folder. A byte-identical TP peer points at
   * the lowest-rank copy, so duplicates are never opened twice.
   */
  source: { path: string; root: string | null; littleEndian: boolean };
  /** Global rank recorded in the file (the file name's rank when absent). */
  rank: number;
  cpRank: number | null;
  cpSize: number | null;
  qkvFormat: string;
  sampleIndices: number[];
  responseLengths: number[];
  totalLengths: number[];
  rewards: (number | null)[];
  truncated: (number | null)[] | null;
  weightVersions: (string[] | null)[] | null;
  maxSeqLens: number[] | null;
  /** Per field, per row: the element count of the row's value, -1 when it is None. Absent columns have no entry. */
  lengths: Partial<Record<TokenField, Int32Array>>;
  /** The batch-global `raw_reward` list when this file carries one (typed when its decode made number lists typed). */
  rawReward: ArrayLike<PyValue> | null;
}

export interface RowLocation {
  file: number;
  row: number;
}

/** One step's train dumps: files in rank order and where each sample's rows are. */
export interface TrainIndex {
  files: TrainShardFile[];
  locations: Map<number, RowLocation[]>;
}

/** One sample's joined train row: its per-token values (`TrainTokens`) and scalars. */
export interface TrainRow extends TrainTokens {
  sampleIndex: number;
  /** Rank of the lowest-rank file holding the sample. */
  rank: number;
  responseLength: number;
  totalLength: number;
  /** Normalized reward (`rewards`). */
  reward: number | null;
  truncated: number | null;
  weightVersions: string[] | null;
  alignmentFailed: boolean;
}

/** Reads one per-token field of one row of one indexed file. */
export type RowFieldReader = (file: number, row: number, field: TokenField) => Promise<Numbers | null>;

const ROW_FIELD_KEY: Record<CpShardedField, keyof TrainRow> = {
  log_probs: 'logProbs',
  rollout_log_probs: 'rolloutLogProbs',
  ref_log_probs: 'refLogProbs',
  entropy: 'entropy',
  ref_entropy: 'refEntropy',
  advantages: 'advantages',
  returns: 'returns',
};

/** Extracts the index of one decoded rank file (scalar columns only; tensors stay unread). */
export async function indexShardFile(
  value: PyValue,
  file: string,
  source: TrainShardFile['source'],
  fileRank: number,
): Promise<TrainShardFile> {
  if (!isDict(value)) throw new DumpInconsistent(file, 'not a train dump (top level is not a dict)');
  const rd = field(value, 'rollout_data');
  if (!isDict(rd)) throw new DumpInconsistent(file, "'rollout_data' is not a dict");
  const required = async (name: string): Promise<number[]> => {
    const col = await scalarColumn(field(rd, name));
    if (!col) throw new DumpInconsistent(file, `rollout_data has no '${name}' column`);
    return col.map((v, i) => {
      if (v === null || !Number.isInteger(v)) throw new DumpInconsistent(file, `${name}[${i}] is not an integer`);
      return v;
    });
  };
  const sampleIndices = await required('sample_indices');
  const responseLengths = await required('response_lengths');
  const totalLengths = await required('total_lengths');
  const n = sampleIndices.length;
  if (responseLengths.length !== n || totalLengths.length !== n) {
    throw new DumpInconsistent(file, `columns disagree on the row count (${n} sample_indices)`);
  }
  const rewards = (await scalarColumn(field(rd, 'rewards'))) ?? new Array<number | null>(n).fill(null);
  const truncated = await scalarColumn(field(rd, 'truncated'));
  const wv = field(rd, 'weight_versions');
  const weightVersions = isList(wv)
    ? wv.map((v) => (isList(v) || isTypedList(v) ? Array.from(v as ArrayLike<PyValue>, (x) => (typeof x === 'string' ? x : String(x))) : null))
    : null;
  const maxSeqLens = await scalarColumn(field(rd, 'max_seq_lens'));
  const lengths: Partial<Record<TokenField, Int32Array>> = {};
  for (const name of [...CP_SHARDED_FIELDS, 'loss_masks'] as const) {
    const col = field(rd, name);
    if (!isList(col)) continue;
    const len = new Int32Array(n);
    for (let i = 0; i < n; i++) len[i] = lengthOf(col[i]) ?? -1;
    lengths[name] = len;
  }
  const raw = field(rd, 'raw_reward');
  return {
    file,
    rolloutData: rd,
    source,
    rank: asInt(field(value, 'rank')) ?? fileRank,
    cpRank: asInt(field(value, 'cp_rank')),
    cpSize: asInt(field(value, 'cp_size')),
    qkvFormat: asString(field(value, 'qkv_format')) ?? 'thd',
    sampleIndices,
    responseLengths,
    totalLengths,
    rewards: rewards.slice(0, n),
    truncated: truncated ? truncated.slice(0, n) : null,
    weightVersions,
    maxSeqLens: maxSeqLens ? maxSeqLens.map((v) => v ?? 0) : null,
    lengths,
    // Shared with `rolloutData` rather than copied: every rank carries the whole batch's list.
    rawReward: isList(raw) || isTypedList(raw) ? raw : null,
  };
}

/** The value of a per-row column of a rank file: the row's entry in `rollout_data[name]`. */
export function rowValue(f: TrainShardFile, name: TokenField, row: number): PyValue | undefined {
  const col = field(f.rolloutData, name);
  return isList(col) ? col[row] : undefined;
}

async function scalarColumn(v: PyValue | undefined): Promise<(number | null)[] | null> {
  if (v === undefined || v === null) return null;
  if (isList(v)) return v.map((x) => asNumber(x));
  if (isTypedList(v)) return Array.from(v);
  const nums = await readNumbers(v);
  return nums ? Array.from(nums) : null;
}

/** Builds the sample → rows index over rank files given in rank order. */
export function indexTrainFiles<F extends { sampleIndices: readonly number[] }>(files: F[]): { files: F[]; locations: Map<number, RowLocation[]> } {
  const locations = new Map<number, RowLocation[]>();
  files.forEach((f, fi) => {
    f.sampleIndices.forEach((s, row) => {
      let locs = locations.get(s);
      if (!locs) locations.set(s, (locs = []));
      locs.push({ file: fi, row });
    });
  });
  return { files, locations };
}

/** Fails when a train row names a sample the rollout dump does not have (the dumps are from different runs or steps). */
export function checkTrainSamples(index: { files: readonly { file: string }[]; locations: ReadonlyMap<number, readonly RowLocation[]> }, known: ReadonlySet<number>): void {
  for (const [s, locs] of index.locations) {
    if (!known.has(s)) throw new DumpInconsistent(index.files[locs[0].file].file, `references sample_index ${s} absent from the rollout dump`);
  }
}

/** The `raw_reward` list of the first of `files` carrying one (in the order given), as numbers; null when none does. */
export function firstRawRewards(files: readonly { rawReward: ArrayLike<PyValue> | null }[]): (number | null)[] | null {
  for (const f of files) if (f.rawReward) return Array.from(f.rawReward, scalarReward);
  return null;
}

/**
 * The batch-global `raw_reward` list (rollout order): that of the step's first rank file carrying one
 * (`firstRawRewards`). A list whose length is not the rollout's sample count cannot be indexed by batch
 * position, so it is treated as absent.
 */
export function batchRawRewards(first: (number | null)[] | null, sampleCount: number): (number | null)[] | null {
  return first && first.length === sampleCount ? first : null;
}

function sameNumbers(a: Numbers, b: Numbers): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

/**
 * Joins one sample across the files holding it: scalars from the lowest rank, per-token fields from the
 * first holder per CP rank (reassembled when CP > 1); a field of the wrong length becomes null.
 */
export async function buildTrainRow(
  index: TrainIndex,
  sampleIndex: number,
  read: RowFieldReader,
): Promise<TrainRow | null> {
  const locs = index.locations.get(sampleIndex);
  if (!locs || locs.length === 0) return null;
  const files = index.files;
  const p = locs[0];
  const pf = files[p.file];
  const responseLength = pf.responseLengths[p.row];
  const totalLength = pf.totalLengths[p.row];
  for (const l of locs.slice(1)) {
    const f = files[l.file];
    if (f.responseLengths[l.row] !== responseLength || f.totalLengths[l.row] !== totalLength) {
      throw new DumpInconsistent(f.file, `rank ${f.rank} disagrees with rank ${pf.rank} on sample ${sampleIndex} lengths`);
    }
  }
  let alignmentFailed = false;

  // CP layout: which CP rank each location holds.
  const cpOf = new Map<RowLocation, number>();
  let cpSize = 1;
  let layoutOk = true;
  const recorded = locs.filter((l) => files[l.file].cpRank !== null);
  if (recorded.length > 0) {
    cpSize = pf.cpSize ?? 1;
    for (const l of locs) cpOf.set(l, files[l.file].cpRank ?? 0);
    layoutOk = new Set(recorded.map((l) => files[l.file].cpRank)).size === cpSize;
  } else {
    // Legacy files without cp_rank: distinct rollout_log_probs rows are the CP slices, in rank order.
    // Full-length rows mean no CP at all, which needs no storage read (duplicates stay unread).
    const probeLength = (l: RowLocation) => files[l.file].lengths.rollout_log_probs?.[l.row] ?? -1;
    const probes = locs.filter((l) => probeLength(l) >= 0 && probeLength(l) !== responseLength);
    const distinct: Numbers[] = [];
    for (const l of locs) cpOf.set(l, 0);
    for (const l of probes) {
      const v = await read(l.file, l.row, 'rollout_log_probs');
      if (!v) continue;
      let k = distinct.findIndex((d) => sameNumbers(d, v));
      if (k < 0) k = distinct.push(v) - 1;
      cpOf.set(l, k);
    }
    cpSize = Math.max(1, distinct.length);
    if (cpSize > 1) {
      let sum = 0;
      distinct.forEach((d, r) => {
        const width = widthOf(cpResponseRanges(totalLength, responseLength, cpSize, r, padded(pf, p.row, totalLength)));
        if (d.length !== width) layoutOk = false;
        sum += d.length;
      });
      if (sum !== responseLength) layoutOk = false;
    }
  }

  const row: TrainRow = {
    sampleIndex,
    rank: pf.rank,
    responseLength,
    totalLength,
    reward: pf.rewards[p.row],
    lossMask: null,
    logProbs: null,
    rolloutLogProbs: null,
    refLogProbs: null,
    entropy: null,
    refEntropy: null,
    advantages: null,
    returns: null,
    truncated: pf.truncated ? pf.truncated[p.row] : null,
    weightVersions: pf.weightVersions ? pf.weightVersions[p.row] : null,
    alignmentFailed: false,
  };

  if (has(pf, 'loss_masks', p.row)) row.lossMask = await read(p.file, p.row, 'loss_masks');

  for (const name of CP_SHARDED_FIELDS) {
    const holders = locs.filter((l) => has(files[l.file], name, l.row));
    if (holders.length === 0) continue;
    if (!layoutOk) {
      alignmentFailed = true;
      continue;
    }
    let value: Numbers | null;
    if (cpSize === 1) {
      value = await read(holders[0].file, holders[0].row, name);
    } else {
      const chunks = new Map<number, RowLocation>();
      for (const h of holders) {
        const r = cpOf.get(h) ?? 0;
        if (!chunks.has(r)) chunks.set(r, h);
      }
      if (chunks.size !== cpSize || [...chunks.keys()].some((r) => r < 0 || r >= cpSize)) {
        alignmentFailed = true;
        continue;
      }
      value = new Float64Array(responseLength);
      let ok = true;
      for (const [r, h] of chunks) {
        const part = await read(h.file, h.row, name);
        const ranges = cpResponseRanges(totalLength, responseLength, cpSize, r, padded(files[h.file], h.row, totalLength));
        if (!part || part.length !== widthOf(ranges)) {
          ok = false;
          break;
        }
        let off = 0;
        for (const [lo, hi] of ranges) {
          for (let i = lo; i < hi; i++) value[i] = part[off++];
        }
      }
      if (!ok) {
        alignmentFailed = true;
        continue;
      }
    }
    (row as unknown as Record<string, Numbers | null>)[ROW_FIELD_KEY[name]] = value;
  }

  // Any per-token field of the wrong length is unusable: null it rather than misalign the stats.
  for (const key of ['lossMask', ...Object.values(ROW_FIELD_KEY)] as const) {
    const v = row[key] as Numbers | null;
    if (v && v.length !== responseLength) {
      (row as unknown as Record<string, Numbers | null>)[key] = null;
      alignmentFailed = true;
    }
  }
  row.alignmentFailed = alignmentFailed;
  return row;
}

function widthOf(ranges: [number, number][]): number {
  return ranges.reduce((s, [lo, hi]) => s + (hi - lo), 0);
}

function padded(f: TrainShardFile, row: number, totalLength: number): number {
  return f.qkvFormat === 'bshd' && f.maxSeqLens ? (f.maxSeqLens[row] ?? totalLength) : totalLength;
}

function has(f: TrainShardFile, name: TokenField, row: number): boolean {
  return (f.lengths[name]?.[row] ?? -1) >= 0;
}
