// One step's train rank files on disk: which archives are byte-identical TP/PP peers, which were decoded,
// and the sample → rows index (whole, or only over the archives that can hold a given sample).
import { join } from 'node:path';
import { ZipArchive, type ZipEntry } from '../../formats/zip.ts';
import { DumpInconsistent } from './errors.ts';
import type { TorchDocument } from './torchDocument.ts';
import { indexShardFile, indexTrainFiles, type TrainIndex, type TrainShardFile } from './trainDump.ts';

export interface RankFileName {
  /** Run-relative, e.g. `train_data/0_3.pt`. */
  name: string;
  rank: number;
}

interface Catalog {
  /** Per file: the position of the lowest-rank file with byte-identical storages (itself when unique). */
  twinOf: number[];
  /** Per file: the byte sizes of its storages. */
  sizes: Set<number>[];
}

/** The storages of a torch archive as `key:size:crc` (null when it has none); equal prints mean equal tensors. */
export function storageFingerprint(entries: readonly ZipEntry[]): string | null {
  const parts: string[] = [];
  for (const e of entries) {
    const m = /\/data\/([^/]+)$/.exec(e.name);
    if (m) parts.push(`${m[1]}:${e.size}:${e.crc32}`);
  }
  return parts.length ? parts.sort().join(',') : null;
}

/** Runs `fn` over `items` with at most `limit` in flight, keeping results in order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
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

export class TrainStepFiles {
  private catalogP: Promise<Catalog> | undefined;
  private readonly decoded = new Map<number, Promise<TrainShardFile>>();
  private fullIndex: Promise<TrainIndex> | undefined;

  constructor(
    private readonly runDir: string,
    /** Rank files in rank order. */
    readonly files: readonly RankFileName[],
    /** Identifies the listing this was built from (the step is rebuilt when files come or go). */
    readonly stamp: string,
    private readonly load: (name: string) => Promise<TorchDocument>,
    private readonly failure: (name: string, e: unknown) => Promise<Error>,
  ) {}

  /** Whether the whole index is already built (no file needs opening to join any sample). */
  get indexed(): boolean {
    return this.fullIndex !== undefined;
  }

  /** Starts reading the rank files' directories (for a token read that first needs the sample's length). */
  prefetch(): void {
    if (!this.fullIndex) this.catalog().catch(() => {});
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
   * An index good for one sample of `totalLength` tokens: over the files that have a storage the size of its
   * token row (per-row tensors), falling back to the whole index when that finds no row for it.
   */
  async indexFor(sampleIndex: number, totalLength: number): Promise<TrainIndex> {
    if (this.fullIndex) return this.fullIndex;
    const { twinOf, sizes } = await this.catalog();
    const candidates: number[] = [];
    sizes.forEach((s, i) => {
      if (s.has(totalLength * 8) || s.has(totalLength * 4)) candidates.push(i);
    });
    if (candidates.length > 0) {
      await mapLimit([...new Set(candidates.map((i) => twinOf[i]))], 2, (i) => this.shard(i));
      const partial = indexTrainFiles(await Promise.all(candidates.map((i) => this.member(i, twinOf))));
      if (partial.locations.has(sampleIndex)) return partial;
    }
    return this.index();
  }

  private catalog(): Promise<Catalog> {
    this.catalogP ??= (async () => {
      const prints = await mapLimit(this.files, 16, async (f) => {
        try {
          const z = await ZipArchive.open(join(this.runDir, f.name));
          try {
            return { print: storageFingerprint(z.entries), sizes: new Set(z.entries.filter((e) => /\/data\/[^/]+$/.test(e.name)).map((e) => e.size)) };
          } finally {
            await z.close();
          }
        } catch (e) {
          throw await this.failure(f.name, e);
        }
      });
      // TP/PP peers that wrote byte-identical tensors (same storage sizes and CRCs) hold the same shard rows:
      // only the lowest rank of each such set is decoded; the others share its index under their own rank.
      const first = new Map<string, number>();
      const twinOf = prints.map((p, i) => {
        if (p.print === null) return i;
        const known = first.get(p.print);
        if (known !== undefined) return known;
        first.set(p.print, i);
        return i;
      });
      return { twinOf, sizes: prints.map((p) => p.sizes) };
    })();
    this.catalogP.catch(() => (this.catalogP = undefined));
    return this.catalogP;
  }

  private shard(i: number): Promise<TrainShardFile> {
    let p = this.decoded.get(i);
    if (!p) {
      const f = this.files[i];
      p = (async () => {
        const doc = await this.load(f.name);
        try {
          const source = { path: join(this.runDir, f.name), root: doc.root ?? null, littleEndian: (doc.byteorder ?? 'little') === 'little' };
          return await indexShardFile(doc.value, f.name, source, f.rank);
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
