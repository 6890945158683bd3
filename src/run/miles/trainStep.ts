// One step's train rank files on disk: which archives are byte-identical TP/PP peers, which were decoded,
// the sample → rows index (whole, or only over the archives that can hold a given sample), and the one-pass
// join of a whole step (shared with a helper thread).
import { join } from 'node:path';
import { openTorchArchive } from '../../formats/torch/load.ts';
import { tensorNumbersFromBytes } from '../../formats/torch/tensorData.ts';
import { Tensor, type PyValue } from '../../formats/torch/value.ts';
import { statSync, type Stats } from 'node:fs';
import { fileIdentity } from '../../formats/fileAccess.ts';
import { visitCentralDirectorySync, ZipArchive, type ZipEntry } from '../../formats/zip.ts';
import { LaterWrites } from '../derivedCache.ts';
import { sampleIndicesInArchive, sampleIndicesOf } from './rankSampleIndices.ts';
import { DumpInconsistent } from '../errors.ts';
import { readNumbers, type TorchDocument } from './torchDocument.ts';
import { field, isList } from './pyFields.ts';
import { milesGlobal } from './globals.ts';
import {
  buildTrainRow,
  CP_SHARDED_FIELDS,
  firstRawRewards,
  indexShardFile,
  indexTrainFiles,
  rowValue,
  type RowFieldReader,
  type RowLocation,
  type TokenField,
  type TrainIndex,
  type TrainRow,
  type TrainShardFile,
} from './trainDump.ts';

export interface RankFileName {
  /** Run-relative, e.g. `train_data/0_3.pt`. */
  name: string;
  rank: number;
  /** The directory listing named it a regular file (not a symlink or anything else). */
  listedRegular?: boolean;
}

interface Catalog {
  /** Per file: the position of the lowest-rank file with byte-identical storages (itself when unique). */
  twinOf: number[];
  /** Per file: the byte sizes of its storages. */
  sizes: Set<number>[];
  /** Per file: its identity (`fileIdentity`) from before its directory was read; null when not known (then not kept). */
  sources: string[] | null;
}

/**
 * What a step's rank files were found to say, as kept between processes: the catalog (twins and storage
 * sizes, from every file's directory) and, per decoded file of a set of twins, its sample indices. Only a
 * store that has checked the files are still the ones described (same identity) hands one back.
 */
export interface StepCatalog {
  /** Per file, its identity (`fileIdentity`) as it was when its directory was read. */
  sources: string[];
  twinOf: number[];
  /** Per file, its storage sizes (twins list the same sizes). */
  sizes: number[][];
  /** Per lowest-rank file of a set of twins that has been decoded: its `sample_indices`, in row order. */
  samples: Map<number, number[]>;
}

/** Where a step's catalog persists (e.g. a cache directory); both calls may fail silently. */
export interface StepCatalogStore {
  load(): Promise<StepCatalog | null>;
  save(catalog: StepCatalog): Promise<void>;
}

/** The storages of a torch archive as `key:size:crc` (null when it has none); equal prints mean equal tensors. */
export function storageFingerprint(entries: readonly ZipEntry[]): string | null {
  const parts: (string | number)[] = [];
  for (const e of entries) {
    const key = storageKey(e.name);
    if (key !== null) parts.push(key, e.size, e.crc32);
  }
  // Entries in directory order: peers written by the same code list them alike (a peer that does not is
  // merely decoded again, never mis-joined).
  return parts.length ? parts.join(':') : null;
}

/** The first `n` bytes as latin1 text, one character per byte (Buffer's own conversion: TextDecoder's is many times slower). */
const latin1Text = (bytes: Uint8Array, n: number): string => Buffer.from(bytes.buffer, bytes.byteOffset, n).toString('latin1');

/**
 * A rank file's storage fingerprint and storage sizes from its central directory, visited without building
 * its entries; null when the archive is one the fast visit leaves to a full open. Its fingerprints are equal
 * exactly when `storageFingerprint`'s are (the same storage keys, sizes and CRCs in the same order), in
 * another form: each storage's key length, key, size and CRC as bytes, read as one latin1 string.
 */
export function storageCatalogOf(
  path: string,
  scratch: { bytes: Uint8Array; print: Uint8Array },
  listedRegular = false,
): QuickCatalog | null {
  const sizes = new Set<number>();
  let n = 0;
  let source = '';
  const ok = visitCentralDirectorySync(path, scratch, (name, start, end, size, crc) => {
    // `<root>/data/<key>`: the last slash, preceded by `/data`.
    let slash = end - 1;
    while (slash >= start && name[slash] !== 0x2f) slash--;
    if (slash < start + 5 || slash === end - 1) return;
    if (name[slash - 5] !== 0x2f || name[slash - 4] !== 0x64 || name[slash - 3] !== 0x61 || name[slash - 2] !== 0x74 || name[slash - 1] !== 0x61) return;
    const keyLength = end - slash - 1;
    if (n + 10 + keyLength > scratch.print.length) {
      const grown = new Uint8Array(2 * (n + 10 + keyLength));
      grown.set(scratch.print.subarray(0, n));
      scratch.print = grown;
    }
    const out = scratch.print;
    out[n++] = keyLength & 0xff;
    out[n++] = keyLength >> 8;
    for (let i = slash + 1; i < end; i++) out[n++] = name[i];
    out[n++] = size & 0xff;
    out[n++] = (size >>> 8) & 0xff;
    out[n++] = (size >>> 16) & 0xff;
    out[n++] = size >>> 24;
    out[n++] = crc & 0xff;
    out[n++] = (crc >>> 8) & 0xff;
    out[n++] = (crc >>> 16) & 0xff;
    out[n++] = crc >>> 24;
    sizes.add(size);
  }, (st) => (source = fileIdentity(st)), listedRegular);
  return ok ? { print: n > 0 ? latin1Text(scratch.print, n) : null, sizes, source } : null;
}

/** A rank file's directory as the quick visit reads it (see `storageCatalogOf`). */
export interface QuickCatalog {
  print: string | null;
  sizes: Set<number>;
  source: string;
}

/**
 * Another thread reading a step's rank file directories (`catalogClaimed`) alongside this one: both take file
 * `k = Atomics.add(counter, 0, 1)` while `k` is below the number of files.
 */
export interface CatalogHelper {
  counter: Int32Array;
  /**
   * What it read by position (null: a file the quick visit declines), once it has taken its last file; a
   * file it took but never delivered (it stopped) is missing.
   */
  finished: Promise<ReadonlyMap<number, QuickCatalog | null>>;
}

/** Starts a helper reading the directories of `paths` (in rank order), or null when none is at hand. */
export type StartCatalogHelper = (paths: string[], listedRegular: boolean[]) => CatalogHelper | null;

/** A helper thread's side of a step's catalog: `storageCatalogOf` of each file it takes from the shared counter (at most `atMost`). */
export function catalogClaimed(paths: readonly string[], listedRegular: readonly boolean[], counter: Int32Array, atMost = Infinity): [number, QuickCatalog | null][] {
  const scratch = { bytes: new Uint8Array(0), print: new Uint8Array(4096) };
  const out: [number, QuickCatalog | null][] = [];
  while (out.length < atMost) {
    const k = Atomics.add(counter, 0, 1);
    if (k >= paths.length) return out;
    out.push([k, storageCatalogOf(paths[k], scratch, listedRegular[k])]);
  }
  return out;
}

/** The storage key of a torch archive entry `<root>/data/<key>`, else null (a plain scan: this runs per entry of every rank file). */
function storageKey(name: string): string | null {
  const slash = name.lastIndexOf('/');
  if (slash < 5 || slash === name.length - 1 || !name.startsWith('/data/', slash - 5)) return null;
  return name.slice(slash + 1);
}

/**
 * TP/PP peers that wrote byte-identical tensors (same storage sizes and CRCs) hold the same shard rows: only
 * the lowest rank of each such set is decoded; the others share its index under their own rank. `prints[k]`
 * is file `files[k]`'s storage fingerprint (files in rank order); the answer maps each of them to its set's
 * lowest-rank file.
 */
function twinsOf(prints: readonly (string | null)[], files: readonly number[]): number[] {
  const twinOf: number[] = [];
  const first = new Map<string, number>();
  prints.forEach((p, k) => {
    const i = files[k];
    const known = p === null ? undefined : first.get(p);
    if (p !== null && known === undefined) first.set(p, i);
    twinOf[i] = known ?? i;
  });
  return twinOf;
}

/** Work of the join between two turns of the event loop, ms. */
const JOIN_SLICE_MS = 8;

/** Most bytes of one rank file the one-pass join holds in memory at once (per kind: records, row storages). */
const IN_MEMORY_BYTES = 256 * 2 ** 20;

/** The per-token fields a joined row reads (see buildTrainRow). */
const ROW_FIELDS: readonly TokenField[] = [...CP_SHARDED_FIELDS, 'loss_masks'];

function isStored(e: ZipEntry): boolean {
  return e.method === 0 && e.compressedSize === e.size;
}

/** The byte sizes of a torch archive's storages. */
function storageSizes(entries: readonly ZipEntry[]): Set<number> {
  const sizes = new Set<number>();
  for (const e of entries) if (storageKey(e.name) !== null) sizes.add(e.size);
  return sizes;
}

/** Runs `fn` over `items` with at most `limit` in flight, keeping results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** A rank file of a step, with its position in the step's list of files. */
export interface PlacedRankFile extends RankFileName {
  i: number;
}

/** A rank file of a join group: `twinOf` is the position of the lowest-rank file with its storages (its own when none). */
export interface GroupMember extends PlacedRankFile {
  twinOf: number;
}

/**
 * Rank files that must be joined together: every file holding a row of one of their samples (the distinct
 * files, whose rows are read, and their byte-identical copies), in file order.
 */
export interface JoinGroup {
  members: GroupMember[];
  /**
   * When the group was formed from its files' `sample_indices` read straight from their bytes: those lists by
   * distinct file (its position); a decode that finds another list fails rather than join a wrong group.
   */
  shown?: [number, number[]][];
}

/**
 * What a step's join says of its rank files besides the joined samples: each file's name and sample
 * indices (a byte-identical copy under its own name), where each sample's rows are, and the `raw_reward`
 * list of the first file carrying one (`firstRawRewards`).
 */
export interface StepRows {
  files: { file: string; sampleIndices: readonly number[] }[];
  locations: Map<number, RowLocation[]>;
  rawRewards: (number | null)[] | null;
}

/** The `raw_reward` list (`firstRawRewards`) of the first file carrying one among some groups, and that file's position in the step. */
export interface GroupRawRewards {
  at: number;
  rewards: (number | null)[];
}

/** The same before it is converted: the list as decoded (every rank file may carry one; only the first is kept). */
interface DecodedRawRewards {
  at: number;
  list: ArrayLike<PyValue>;
}

/** The first of two lists by file position. */
function firstOf<T extends { at: number }>(a: T | null, b: T | null | undefined): T | null {
  return b && (a === null || b.at < a.at) ? b : a;
}

/** One group joined, in a form that crosses threads: its samples' reductions. */
export interface JoinedGroup<D> {
  /** The group's position in the list handed out. */
  g: number;
  samples: [number, D][];
}

/** What a helper joined: its groups, the first `raw_reward` list among them, and what stopped it if anything did. */
export interface HelperJoined<D> {
  groups: JoinedGroup<D>[];
  raw?: GroupRawRewards;
  error?: JoinFailure;
}

/** A failure while joining, with the position (in the step's files) of the rank file it concerns. */
export interface JoinFailure {
  i: number;
  error: unknown;
}

/**
 * Another thread joining groups of the same step with `joinGroupAlone`: it takes `groups[k]` for each
 * `k = Atomics.add(counter, 0, 1)` below `groups.length`, as the calling thread does.
 */
export interface JoinHelper<D> {
  start(runDir: string, groups: JoinGroup[], counter: Int32Array): void;
  /** What it joined, once it has taken its last group; `error` stops the join. A stopped helper delivers what it finished. */
  finished(): Promise<HelperJoined<D>>;
  /** The join will not start (or has failed): release the helper. */
  cancel(): void;
}

/** Thrown by the group join: the index position of the file a failure concerns. */
class AtFile {
  constructor(
    readonly file: number,
    readonly error: unknown,
  ) {}
}

/**
 * Decodes the pickle of one rank file (its small records in one read; a pickle too big for that streams
 * from the file) into its index record, tensors unread. Errors are the loader's, unmapped.
 */
async function decodeRankFile(runDir: string, f: RankFileName, archive: ZipArchive): Promise<TrainShardFile> {
  try {
    const records = archive.entries.filter((e) => storageKey(e.name) === null && isStored(e));
    if (records.reduce((n, e) => n + e.size, 0) <= IN_MEMORY_BYTES) archive.loadSync(records);
    // Number lists (every rank's copy of the batch's `raw_reward`, the row scalars) as typed arrays: far
    // fewer objects for the collector to move while the whole step's index is held.
    const doc = await openTorchArchive(archive, { typedLists: true, allowGlobal: milesGlobal });
    const source = { path: join(runDir, f.name), root: doc.root, littleEndian: doc.byteorder === 'little' };
    return await indexShardFile(doc.value, f.name, source, f.rank);
  } finally {
    archive.releaseBytes();
  }
}

/** Scratch memory of a group join: one buffer per distinct file of a group, reused from group to group. */
type JoinScratch = Uint8Array[];

/**
 * Joins `samples` over `index`, every file holding a row of one of them having its archive in `archives`
 * (by source path): reads the per-token row storages of those archives (the row fields only, not the token
 * ids) in a few blocking reads each, builds and reduces each sample's row, then drops the bytes. A failure
 * reading a file is thrown as `AtFile` (its index position); a DumpInconsistent is thrown as is.
 */
async function joinSamples<D>(
  index: TrainIndex,
  samples: readonly number[],
  archives: ReadonlyMap<string, ZipArchive>,
  reduce: (row: TrainRow) => D,
  scratch: JoinScratch,
): Promise<[number, D][]> {
  // The row storages the samples read, per distinct file (by its source), in a few reads into reused
  // memory; a group too big for that is read storage by storage. Copies share their lowest rank's record and
  // source: each source is read once.
  const wanted = new Map<string, { file: number; entries: Set<ZipEntry> }>();
  // Each source is named (in errors) by the first of its files a sample lists.
  for (const s of samples) {
    for (const l of index.locations.get(s) ?? []) {
      const f = index.files[l.file];
      if (!wanted.has(f.source.path) && archives.has(f.source.path) && f.source.littleEndian) wanted.set(f.source.path, { file: l.file, entries: new Set() });
    }
  }
  const want = (file: number, row: number, name: TokenField): void => {
    const f = index.files[file];
    const w = wanted.get(f.source.path);
    const v = rowValue(f, name, row);
    const e = w && v instanceof Tensor ? archives.get(f.source.path)!.entry(`${f.source.root ? `${f.source.root}/` : ''}data/${v.storage.key}`) : undefined;
    // A compressed storage is left to the read that reports it.
    if (e && isStored(e)) w!.entries.add(e);
  };
  for (const s of samples) {
    const locs = index.locations.get(s) ?? [];
    const reads = rowReadsOf(index, locs);
    if (reads) for (const r of reads) want(r.file, r.row, r.field);
    else for (const l of locs) for (const name of ROW_FIELDS) want(l.file, l.row, name);
  }
  let total = 0;
  for (const w of wanted.values()) for (const e of w.entries) total += e.size;
  const loaded: ZipArchive[] = [];
  try {
    if (total <= IN_MEMORY_BYTES) {
      let k = 0;
      for (const [path, w] of wanted) {
        const slot = k++;
        const archive = archives.get(path)!;
        try {
          archive.loadSync(w.entries, {
            memory: (size) => (scratch[slot]?.byteLength >= size ? scratch[slot] : (scratch[slot] = new Uint8Array(size + (size >> 3)))),
          });
        } catch (e) {
          throw new AtFile(w.file, e);
        }
        loaded.push(archive);
      }
    }
    // Reads row tensors straight from the archives' bytes (no storage keeps a copy).
    const read: RowFieldReader = async (file, row, fieldName) => {
      const f = index.files[file];
      const v = rowValue(f, fieldName, row);
      try {
        const archive = archives.get(f.source.path);
        if (!(v instanceof Tensor) || !f.source.littleEndian || !archive) return await readNumbers(v);
        return tensorNumbersFromBytes(v, await archive.read(`${f.source.root ? `${f.source.root}/` : ''}data/${v.storage.key}`));
      } catch (e) {
        throw new AtFile(file, e);
      }
    };
    const out: [number, D][] = [];
    for (const s of samples) {
      const row = await buildTrainRow(index, s, read);
      if (row) out.push([s, reduce(row)]);
    }
    return out;
  } finally {
    for (const a of loaded) a.releaseBytes();
  }
}

/**
 * The row storages `buildTrainRow` reads for a sample whose rows need no reassembly of context-parallel
 * slices (one CP rank recorded, or none and every row full length): the loss mask of its first row and each
 * field from its first holder. Null when it may need more; then every row field of its files is read.
 */
function rowReadsOf(index: TrainIndex, locs: readonly RowLocation[]): { file: number; row: number; field: TokenField }[] | null {
  if (locs.length === 0) return [];
  const files = index.files;
  const first = files[locs[0].file];
  const responseLength = first.responseLengths[locs[0].row];
  const recorded = locs.some((l) => files[l.file].cpRank !== null);
  if (recorded ? (first.cpSize ?? 1) !== 1 : locs.some((l) => fieldLength(files[l.file], 'rollout_log_probs', l.row) >= 0 && fieldLength(files[l.file], 'rollout_log_probs', l.row) !== responseLength)) return null;
  const out: { file: number; row: number; field: TokenField }[] = [];
  if (fieldLength(first, 'loss_masks', locs[0].row) >= 0) out.push({ file: locs[0].file, row: locs[0].row, field: 'loss_masks' });
  for (const name of CP_SHARDED_FIELDS) {
    const holder = locs.find((l) => fieldLength(files[l.file], name, l.row) >= 0);
    if (holder) out.push({ file: holder.file, row: holder.row, field: name });
  }
  return out;
}

function fieldLength(f: TrainShardFile, name: TokenField, row: number): number {
  return f.lengths[name]?.[row] ?? -1;
}

/** How a group is decoded: archives already open (by file position), and who is told of each decode. */
interface GroupDecodeOptions {
  opened?: ReadonlyMap<number, ZipArchive>;
  onDecode?: (name: string) => void;
}

/**
 * The distinct files of a group decoded and indexed on their own, with their twins under their own names. A
 * file whose decoded sample indices differ from those the group was formed from (`shown`) fails.
 */
async function decodeGroup(
  runDir: string,
  group: JoinGroup,
  opts: GroupDecodeOptions = {},
): Promise<{ index: TrainIndex; archives: Map<string, ZipArchive> }> {
  const { members } = group;
  const own = new Map<number, TrainShardFile>();
  const archives = new Map<string, ZipArchive>();
  const shown = group.shown ? new Map(group.shown) : null;
  for (const m of members) {
    if (m.twinOf !== m.i) continue;
    try {
      const archive = opts.opened?.get(m.i) ?? ZipArchive.openSync(join(runDir, m.name), { wholeFileBelow: 0 });
      opts.onDecode?.(m.name);
      const shard = await decodeRankFile(runDir, m, archive);
      const expected = shown?.get(m.i);
      if (shown && (!expected || expected.length !== shard.sampleIndices.length || expected.some((s, k) => s !== shard.sampleIndices[k]))) {
        throw new DumpInconsistent(m.name, 'sample_indices decode other than their bytes read');
      }
      own.set(m.i, shard);
      archives.set(shard.source.path, archive);
    } catch (e) {
      throw new AtFile(m.i, e);
    }
  }
  const index = indexTrainFiles(
    members.map((m) => {
      const root = own.get(m.twinOf);
      if (!root) throw new AtFile(m.i, new Error(`${m.name}: its byte-identical copy is not in the group`));
      return m.twinOf === m.i ? root : { ...root, file: m.name, rank: m.rank };
    }),
  );
  return { index, archives };
}

/** One group joined on its own: its samples' reductions and its first file carrying a `raw_reward` list. */
interface GroupJoined<D> {
  samples: [number, D][];
  raw: DecodedRawRewards | null;
}

/**
 * Joins one group on its own (another thread's side of `joinAll`, or this one's when the groups were formed
 * before any decode): decodes its distinct files, then joins every sample they hold. The samples' rows are
 * those of the whole step's index: the group holds every file holding any of them, in the same order.
 * Failures name the file's position in the step (`JoinFailure`).
 */
async function joinGroupAlone<D>(
  runDir: string,
  group: JoinGroup,
  reduce: (row: TrainRow) => D,
  scratch: JoinScratch,
  opts: GroupDecodeOptions = {},
): Promise<GroupJoined<D>> {
  const { members } = group;
  const at = (e: unknown, file: (k: number) => number): never => {
    if (e instanceof AtFile) throw { i: file(e.file), error: e.error } satisfies JoinFailure;
    throw e;
  };
  let decoded: Awaited<ReturnType<typeof decodeGroup>>;
  try {
    decoded = await decodeGroup(runDir, group, opts);
  } catch (e) {
    return at(e, (i) => i);
  }
  // Members are in file order: the first carrying the list is the group's lowest such position.
  const k = decoded.index.files.findIndex((f) => f.rawReward !== null);
  const raw = k < 0 ? null : { at: members[k].i, list: decoded.index.files[k].rawReward! };
  try {
    return { samples: await joinSamples(decoded.index, [...decoded.index.locations.keys()], decoded.archives, reduce, scratch), raw };
  } catch (e) {
    return at(e, (k) => members[k].i);
  }
}

/**
 * A helper thread's side of `joinAll`: joins `groups[k]` for each `k` it takes from the shared counter until
 * none is left, returning their reductions (structured-cloneable) or the first failure.
 */
export async function joinClaimed<D>(
  runDir: string,
  groups: readonly JoinGroup[],
  counter: Int32Array,
  reduce: (row: TrainRow) => D,
): Promise<HelperJoined<D>> {
  const out: JoinedGroup<D>[] = [];
  const scratch: JoinScratch = [];
  // only the first list is converted and posted
  let first: DecodedRawRewards | null = null;
  const joined = (error?: JoinFailure): HelperJoined<D> => {
    const raw = first ? { at: first.at, rewards: firstRawRewards([{ rawReward: first.list }])! } : undefined;
    return { groups: out, ...(raw ? { raw } : {}), ...(error ? { error } : {}) };
  };
  for (;;) {
    const k = Atomics.add(counter, 0, 1);
    if (k >= groups.length) return joined();
    try {
      const { samples, raw } = await joinGroupAlone(runDir, groups[k], reduce, scratch);
      out.push({ g: k, samples });
      first = firstOf(first, raw);
    } catch (e) {
      const failure = e as JoinFailure;
      if (typeof failure?.i === 'number' && 'error' in failure) return joined(failure);
      // Not a file's failure (a DumpInconsistent between files): reported against the group's first file.
      return joined({ i: groups[k].members[0].i, error: e });
    }
  }
}

/**
 * The step's samples in groups that share no rank file: files are grouped when a sample has rows in both
 * (byte-identical copies count as their lowest-rank file). Each group lists its member files (distinct
 * files and their copies, in file order) and its samples (in index order); groups in order of their first
 * file.
 */
function joinGroups(
  index: { files: readonly { sampleIndices: readonly number[] }[]; locations: ReadonlyMap<number, readonly RowLocation[]> },
  twinOf: readonly number[],
): { members: number[]; samples: number[] }[] {
  const parent = twinOf.map((_, i) => i);
  const find = (x: number): number => {
    while (parent[x] !== x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const locs of index.locations.values()) {
    const a = find(twinOf[locs[0].file]);
    for (let k = 1; k < locs.length; k++) {
      const b = find(twinOf[locs[k].file]);
      if (a !== b) parent[Math.max(a, b)] = Math.min(a, b);
    }
  }
  const byRoot = new Map<number, { members: number[]; samples: number[] }>();
  const groupOf = (i: number) => {
    const r = find(twinOf[i]);
    let g = byRoot.get(r);
    if (!g) byRoot.set(r, (g = { members: [], samples: [] }));
    return g;
  };
  // Files in order, so each group's members are in file order and groups in order of their first file.
  for (let i = 0; i < twinOf.length; i++) if (index.files[i].sampleIndices.length > 0) groupOf(i).members.push(i);
  for (const [s, locs] of index.locations) groupOf(locs[0].file).samples.push(s);
  return [...byRoot.values()];
}

export class TrainStepFiles {
  private catalogP: Promise<Catalog> | undefined;
  private readonly decoded = new Map<number, Promise<TrainShardFile>>();
  /** Per lowest-rank file of a set of twins: its sample indices, once decoded here or by an earlier process. */
  private readonly known = new Map<number, number[]>();
  private fullIndex: Promise<TrainIndex> | undefined;
  /** The last save of the catalog to the store (saves run one after another). */
  private readonly writes = new LaterWrites();
  /** Settles once the catalog is needed (not only read ahead, see `prefetch`). */
  private readonly catalogNeeded: Promise<void>;
  private needCatalog!: () => void;

  constructor(
    private readonly runDir: string,
    /** Rank files in rank order. */
    readonly files: readonly RankFileName[],
    /** Identifies the listing this was built from (the step is rebuilt when files come or go). */
    readonly stamp: string,
    private readonly load: (name: string) => Promise<TorchDocument>,
    private readonly failure: (name: string, e: unknown) => Promise<Error>,
    /** Told the name of each rank file decoded here (tests observe what a join costs). */
    private readonly onDecode: (name: string) => void = () => {},
    /** Where the catalog is kept between processes (none: every process scans the files' directories). */
    private readonly store: StepCatalogStore | null = null,
    /** Another thread that may read the files' directories for the catalog (none: this one reads them all). */
    private readonly catalogHelper: StartCatalogHelper | null = null,
  ) {
    this.catalogNeeded = new Promise<void>((r) => (this.needCatalog = r));
  }

  /** Settles once every catalog save asked for so far has been written (or has failed). */
  saved(): Promise<void> {
    return this.writes.settled();
  }

  /** Whether the whole index is already built (no file needs opening to join any sample). */
  get indexed(): boolean {
    return this.fullIndex !== undefined;
  }

  /**
   * Joins every sample of the step in one pass over the rank files, with blocking reads: each file's
   * directory is read once; each file with new storages (the lowest rank of its byte-identical set) has its
   * pickle decoded once. Files sharing a sample (PP stages holding other fields of the same rows, CP slices,
   * overlapping shards) form a group; each group's row storages are read once and its samples joined and
   * reduced together — here, or on `helper`'s thread, whichever claims the group first — then the bytes are
   * dropped. When every distinct file's `sample_indices` read straight from its pickle's bytes, the groups are
   * formed from those and each group's files are decoded by the thread that claims it (a thread decodes only
   * its own groups' files); otherwise every distinct file is decoded here first. The reductions equal those
   * of a join over the whole index (`index()`).
   */
  joinAll<D>(reduce: (row: TrainRow) => D, helper?: JoinHelper<D>): Promise<{ rows: StepRows; joined: Map<number, D> }> {
    return (async () => {
      const twinOf: number[] = [];
      const sizes: Set<number>[] = [];
      const sources: string[] = [];
      const first = new Map<string, number>();
      const roots: { i: number; archive: ZipArchive }[] = [];
      let shown: Map<number, number[]> | null = new Map();
      try {
        const scratch = { bytes: new Uint8Array(0), print: new Uint8Array(4096) };
        const open = async (f: RankFileName): Promise<ZipArchive> => {
          try {
            return ZipArchive.openSync(join(this.runDir, f.name), { wholeFileBelow: 0, listedRegular: f.listedRegular });
          } catch (e) {
            throw await this.failure(f.name, e);
          }
        };
        for (let i = 0; i < this.files.length; i++) {
          if (i % 32 === 31) await new Promise<void>((r) => setImmediate(r));
          const f = this.files[i];
          // A byte-identical copy is never opened whole: its directory is only visited. (A file the visit
          // declines is opened; its print, in the other form, then matches no visited file's: it is merely
          // decoded again, never mis-joined.)
          const quick = storageCatalogOf(join(this.runDir, f.name), scratch, f.listedRegular);
          let archive: ZipArchive | undefined;
          let print: string | null;
          if (quick) {
            ({ print } = quick);
            sizes.push(quick.sizes);
            // Its identity before it was read (its fstat at open): the catalog found here is kept under it.
            sources.push(quick.source);
          } else {
            archive = await open(f);
            sources.push(fileIdentity(archive.openedStat!));
            sizes.push(storageSizes(archive.entries));
            print = storageFingerprint(archive.entries);
          }
          const known = print === null ? undefined : first.get(print);
          if (print !== null && known === undefined) first.set(print, i);
          twinOf.push(known ?? i);
          if (known === undefined) roots.push({ i, archive: archive ?? (await open(f)) });
        }
        this.catalogP ??= Promise.resolve({ twinOf, sizes, sources });
        // Each distinct file's sample indices from its pickle's bytes, into one reused buffer.
        let memory = new Uint8Array(0);
        const reuse = (size: number): Uint8Array => (memory.byteLength >= size ? memory : (memory = new Uint8Array(size + (size >> 3))));
        for (let n = 0; n < roots.length && shown; n++) {
          if (n % 64 === 63) await new Promise<void>((r) => setImmediate(r));
          const list = await sampleIndicesInArchive(roots[n].archive, reuse);
          if (list) shown.set(roots[n].i, list);
          else shown = null;
        }
      } catch (e) {
        helper?.cancel();
        this.persist();
        throw e;
      }
      try {
        return await (shown ? this.joinByGroups(reduce, helper, twinOf, roots, shown) : this.joinDecoded(reduce, helper, twinOf, roots));
      } finally {
        // Saved once for the whole pass (not after each file: a save serializes the whole catalog).
        this.persist();
      }
    })();
  }

  /**
   * `joinAll` over groups formed from the distinct files' sample indices as their bytes show them (`shown`):
   * each thread decodes the files of the groups it claims, and keeps none of them once joined.
   */
  private async joinByGroups<D>(
    reduce: (row: TrainRow) => D,
    helper: JoinHelper<D> | undefined,
    twinOf: readonly number[],
    roots: readonly { i: number; archive: ZipArchive }[],
    shown: ReadonlyMap<number, number[]>,
  ): Promise<{ rows: StepRows; joined: Map<number, D> }> {
    const files = this.files.map((f, i) => ({ file: f.name, sampleIndices: shown.get(twinOf[i])! }));
    const light = indexTrainFiles(files);
    const formed = joinGroups(light, twinOf);
    // A distinct file holding no rows is decoded all the same (its records are checked, its raw_reward may be the first).
    for (const r of roots) if (shown.get(r.i)!.length === 0) formed.push({ members: twinOf.flatMap((t, i) => (t === r.i ? [i] : [])), samples: [] });
    const groups: JoinGroup[] = formed.map((g) => ({
      members: g.members.map((i) => ({ i, ...this.files[i], twinOf: twinOf[i] })),
      shown: g.members.filter((i) => twinOf[i] === i).map((i) => [i, shown.get(i)!]),
    }));
    const opened = new Map(roots.map((r) => [r.i, r.archive]));
    const counter = new Int32Array(new SharedArrayBuffer(4));
    helper?.start(this.runDir, groups, counter);
    const joined = new Map<number, D>();
    // The list of the first file (by position) carrying one, among the groups joined here and on the helper.
    let here = null as DecodedRawRewards | null;
    let theirs = null as GroupRawRewards | null;
    const scratch: JoinScratch = [];
    const joinHere = async (g: number): Promise<void> => {
      let done: GroupJoined<D>;
      try {
        done = await joinGroupAlone(this.runDir, groups[g], reduce, scratch, { opened, onDecode: this.onDecode });
      } catch (e) {
        const failure = e as JoinFailure;
        if (typeof failure?.i !== 'number' || !('error' in failure)) throw e;
        throw failure.error instanceof DumpInconsistent ? failure.error : await this.failure(this.files[failure.i].name, failure.error);
      }
      for (const [s, value] of done.samples) joined.set(s, value);
      here = firstOf(here, done.raw);
    };
    await this.shareGroups(groups.length, counter, joinHere, helper, joined, (raw) => (theirs = raw ?? null));
    for (const [i, list] of shown) this.learn(i, list, false);
    const raw = firstOf<{ at: number }>(here, theirs);
    const rawRewards = raw === null ? null : raw === theirs ? theirs.rewards : firstRawRewards([{ rawReward: here!.list }]);
    return { rows: { ...light, rawRewards }, joined };
  }

  /**
   * Joins here each group claimed from `counter` (which `helper` claims from too), letting other requests in every
   * few ms; then takes in the helper's groups (`theirRaw` is given the first raw_reward list among them) and
   * joins here any it claimed but never delivered (it stopped).
   */
  private async shareGroups<D>(
    count: number,
    counter: Int32Array,
    joinHere: (g: number) => Promise<void>,
    helper: JoinHelper<D> | undefined,
    joined: Map<number, D>,
    theirRaw?: (raw: GroupRawRewards | undefined) => void,
  ): Promise<void> {
    const done = new Set<number>();
    try {
      let turnAt = performance.now();
      for (;;) {
        const k = Atomics.add(counter, 0, 1);
        if (k >= count) break;
        if (performance.now() - turnAt >= JOIN_SLICE_MS) {
          await new Promise<void>((r) => setImmediate(r));
          turnAt = performance.now();
        }
        await joinHere(k);
        done.add(k);
      }
    } catch (e) {
      helper?.cancel();
      throw e;
    }
    if (!helper) return;
    const theirs = await helper.finished();
    if (theirs.error) {
      const { i, error } = theirs.error;
      throw error instanceof DumpInconsistent ? error : await this.failure(this.files[i].name, error);
    }
    for (const { g, samples } of theirs.groups) {
      done.add(g);
      for (const [s, value] of samples) joined.set(s, value);
    }
    theirRaw?.(theirs.raw);
    for (let g = 0; g < count; g++) if (!done.has(g)) await joinHere(g);
  }

  /** `joinAll` after decoding every distinct file here: the groups are formed from the whole index. */
  private async joinDecoded<D>(
    reduce: (row: TrainRow) => D,
    helper: JoinHelper<D> | undefined,
    twinOf: readonly number[],
    roots: readonly { i: number; archive: ZipArchive }[],
  ): Promise<{ rows: StepRows; joined: Map<number, D> }> {
    const shards = new Map<number, TrainShardFile>();
    const archives = new Map<string, ZipArchive>();
    try {
      // Each distinct file's pickle, decoded once (its rows' tensors stay unread).
      let turnAt = performance.now();
      for (let n = 0; n < roots.length; n++) {
        // Let other requests (and the decode worker's message) in between files every few ms: a whole step
        // is a long synchronous stretch otherwise.
        if (performance.now() - turnAt >= JOIN_SLICE_MS) {
          await new Promise<void>((r) => setImmediate(r));
          turnAt = performance.now();
        }
        const { i, archive } = roots[n];
        this.onDecode(this.files[i].name);
        try {
          const shard = await decodeRankFile(this.runDir, this.files[i], archive);
          shards.set(i, shard);
          archives.set(shard.source.path, archive);
          this.learn(i, shard.sampleIndices, false);
        } catch (e) {
          if (e instanceof DumpInconsistent) throw e;
          throw await this.failure(this.files[i].name, e);
        }
      }
    } catch (e) {
      helper?.cancel();
      throw e;
    }

    const index = indexTrainFiles(
      this.files.map((f, i) => {
        const own = shards.get(twinOf[i])!;
        return twinOf[i] === i ? own : { ...own, file: f.name, rank: f.rank };
      }),
    );
    const groups = joinGroups(index, twinOf);
    const joined = new Map<number, D>();
    // Both threads take the next unclaimed group from one shared counter.
    const counter = new Int32Array(new SharedArrayBuffer(4));
    helper?.start(
      this.runDir,
      groups.map((g) => ({ members: g.members.map((i) => ({ i, ...this.files[i], twinOf: twinOf[i] })) })),
      counter,
    );
    const scratch: JoinScratch = [];
    const joinHere = async (g: number): Promise<void> => {
      try {
        for (const [s, value] of await joinSamples(index, groups[g].samples, archives, reduce, scratch)) joined.set(s, value);
      } catch (e) {
        if (e instanceof AtFile) throw await this.failure(index.files[e.file].file, e.error);
        throw e;
      }
    };
    await this.shareGroups(groups.length, counter, joinHere, helper, joined);
    return { rows: { files: index.files, locations: index.locations, rawRewards: firstRawRewards(index.files) }, joined };
  }

  /**
   * Starts reading the rank files' directories (for a token read that first needs the sample's length): on the
   * helper thread when there is one, this thread joining in only once the catalog is needed.
   */
  prefetch(): void {
    if (!this.fullIndex) this.catalog(false).catch(() => {});
  }

  /** The sample → rows index over every rank file. */
  index(): Promise<TrainIndex> {
    this.fullIndex ??= (async () => {
      const { twinOf } = await this.catalog();
      const own = [...new Set(twinOf)];
      await mapLimit(own, 2, (i) => this.shard(i));
      return indexTrainFiles(await Promise.all(this.files.map((_, i) => this.member(i, twinOf))));
    })();
    this.fullIndex.catch(() => (this.fullIndex = undefined));
    return this.fullIndex;
  }

  /**
   * An index good for one sample of `totalLength` tokens: over the files that hold it among those with a
   * storage the size of its token row (per-row tensors), falling back to the whole index when none does.
   * Files whose sample indices are known (decoded before, here or by an earlier process) are decoded only
   * when they hold the sample; leaving out the candidates that do not changes no row of it.
   */
  async indexFor(sampleIndex: number, totalLength: number): Promise<TrainIndex> {
    if (this.fullIndex) return this.fullIndex;
    const { twinOf, sizes } = await this.catalog();
    const candidates: number[] = [];
    sizes.forEach((s, i) => {
      if (s.has(totalLength * 8) || s.has(totalLength * 4)) candidates.push(i);
    });
    if (candidates.length > 0) {
      // Copies of a candidate are candidates too (same storage sizes), so twins among them are all it takes.
      const roots = [...new Set(candidates.map((i) => twinOf[i]))];
      // A root whose pickle shows its sample indices plainly is decoded only when it holds the sample.
      for (const r of roots) {
        if (this.known.has(r)) continue;
        const shown = await sampleIndicesOf(join(this.runDir, this.files[r].name));
        if (shown) this.learn(r, shown, true, false);
      }
      await mapLimit(
        roots.filter((r) => this.known.get(r)?.includes(sampleIndex) ?? true),
        2,
        (i) => this.shard(i),
      );
      const holding = candidates.filter((i) => this.known.get(twinOf[i])!.includes(sampleIndex));
      if (holding.length > 0) return indexTrainFiles(await Promise.all(holding.map((i) => this.member(i, twinOf))));
    }
    return this.index();
  }

  /** Twins and storage sizes of every rank file: from the store when it has them, else from their directories. */
  private catalog(needed = true): Promise<Catalog> {
    if (needed) this.needCatalog();
    this.catalogP ??= (async () => {
      const kept = this.store ? await this.store.load().catch(() => null) : null;
      if (kept && kept.twinOf.length === this.files.length && kept.sizes.length === this.files.length) {
        for (const [i, samples] of kept.samples) if (!this.known.has(i)) this.known.set(i, samples);
        // Twins list the same sizes: one set serves them all.
        const sets = new Map<number, Set<number>>();
        const sizes = kept.twinOf.map((t, i) => {
          let set = sets.get(t);
          if (!set) sets.set(t, (set = new Set(kept.sizes[i])));
          return set;
        });
        return { twinOf: kept.twinOf, sizes, sources: kept.sources };
      }
      const all = this.files.map((_, i) => i);
      const helper = this.catalogHelper?.(
        this.files.map((f) => join(this.runDir, f.name)),
        this.files.map((f) => f.listedRegular === true),
      );
      // The helper reads from now on; this thread joins in once the catalog is needed (or takes what it read).
      // A helper that stopped early (its thread was given a step to decode) leaves the rest until then.
      if (helper) await Promise.race([this.catalogNeeded, helper.finished.then((read) => (read.size < this.files.length ? this.catalogNeeded : undefined))]);
      const scratch = { bytes: new Uint8Array(0), print: new Uint8Array(4096) };
      const prints = await this.scan(
        all,
        // A file the quick visit declines: its identity is taken before the full open reads it.
        (entries, st) => ({ print: storageFingerprint(entries), sizes: storageSizes(entries), source: st ? fileIdentity(st) : '' }),
        (path, f) => storageCatalogOf(path, scratch, f.listedRegular),
        helper ?? undefined,
      );
      const sources = prints.map((p) => p.source);
      const catalog = { twinOf: twinsOf(prints.map((p) => p.print), all), sizes: prints.map((p) => p.sizes), sources: sources.every((x) => x !== '') ? sources : null };
      queueMicrotask(() => this.persist());
      return catalog;
    })();
    this.catalogP.catch(() => (this.catalogP = undefined));
    return this.catalogP;
  }

  /**
   * Notes the sample indices of a lowest-rank file (kept with the catalog, saved now unless `save` is false):
   * a decode's list is the file's and replaces one read from its bytes; a list read from its bytes is kept
   * only where none is known.
   */
  private learn(i: number, samples: number[], save = true, decoded = true): void {
    const known = this.known.get(i);
    if (known && (!decoded || (known.length === samples.length && known.every((s, k) => s === samples[k])))) return;
    this.known.set(i, samples);
    if (save) this.persist();
  }

  /** Saves the catalog to the store soon (after the current work), once for any number of changes meanwhile. */
  private persist(): void {
    if (!this.store || !this.catalogP) return;
    const store = this.store;
    const catalogP = this.catalogP;
    this.writes.request(async () => {
      const { twinOf, sizes, sources } = await catalogP;
      if (sources) await store.save({ sources, twinOf, sizes: sizes.map((s) => [...s]), samples: new Map(this.known) });
    });
  }

  /**
   * `read` of the central directory of each listed rank file. Blocking reads (one open, one tail read, one
   * close per file) cost far less than a promise round trip per step; the loop yields between batches.
   */
  private async scan<T>(
    which: readonly number[],
    read: (entries: readonly ZipEntry[], st?: Stats) => T,
    fast?: (path: string, f: RankFileName) => T | null,
    helper?: { counter: Int32Array; finished: Promise<ReadonlyMap<number, T | null>> },
  ): Promise<T[]> {
    const out = new Array<T | undefined>(which.length);
    const readAt = async (k: number): Promise<T> => {
      const f = this.files[which[k]];
      const path = join(this.runDir, f.name);
      const quick = fast?.(path, f) ?? null;
      if (quick !== null) return quick;
      try {
        const st = fast ? statSync(path) : undefined;
        return read(ZipArchive.openSync(path, { wholeFileBelow: 0 }).entries, st);
      } catch (e) {
        throw await this.failure(f.name, e);
      }
    };
    // Positions are taken one at a time, from the counter shared with the helper when there is one.
    let mine = 0;
    for (;;) {
      const k = helper ? Atomics.add(helper.counter, 0, 1) : mine;
      if (k >= which.length) break;
      if (mine++ % 32 === 31) await new Promise<void>((r) => setImmediate(r));
      out[k] = await readAt(k);
    }
    if (mine < which.length && helper) {
      const theirs = await helper.finished;
      // What the helper declined or never delivered is read here after all.
      for (let k = 0; k < which.length; k++) if (out[k] === undefined) out[k] = theirs.get(k) ?? (await readAt(k));
    }
    return out as T[];
  }

  private shard(i: number): Promise<TrainShardFile> {
    let p = this.decoded.get(i);
    if (!p) {
      const f = this.files[i];
      p = (async () => {
        const doc = await this.load(f.name);
        try {
          const source = { path: join(this.runDir, f.name), root: doc.root ?? null, littleEndian: (doc.byteorder ?? 'little') === 'little' };
          const shard = await indexShardFile(doc.value, f.name, source, f.rank);
          this.learn(i, shard.sampleIndices);
          return shard;
        } catch (e) {
          if (e instanceof DumpInconsistent) throw e;
          throw await this.failure(f.name, e);
        } finally {
          await doc.close();
        }
      })();
      this.decoded.set(i, p);
      p.catch(() => this.decoded.delete(i));
    }
    return p;
  }

  private async member(i: number, twinOf: number[]): Promise<TrainShardFile> {
    const twin = await this.shard(twinOf[i]);
    return twinOf[i] === i ? twin : { ...twin, file: this.files[i].name, rank: this.files[i].rank };
  }
}
