// The train dumps (`train_data/{id}_{rank}.pt`): the listing, one step's rank files (their catalog kept in
// the cache directory) and a reader of per-token row fields straight from the rank archives.
import { readFileSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileIdentity, fileKind } from '../../formats/fileAccess.ts';
import { tensorNumbersFromBytes } from '../../formats/torch/tensorData.ts';
import { Tensor } from '../../formats/torch/value.ts';
import { ZipArchive } from '../../formats/zip.ts';
import { Lru } from './lru.ts';
import { CP_SHARDED_FIELDS, rowValue, type RowFieldReader, type TokenField, type TrainIndex } from './trainDump.ts';
import { readNumbers } from './torchDocument.ts';
import { TrainStepFiles, type RankFileName, type StartCatalogHelper, type StepCatalog, type StepCatalogStore } from './trainStep.ts';
import { isMissing, type DumpFiles } from './dumpFiles.ts';
import { TRAIN_DIR, trainFile, trainRankOf } from '../../formats/miles/layout.ts';

const TRAIN_CATALOG_VERSION = 1;
/** Rank files up to this size are read whole when a step is joined (most of their storages are needed). */
const WHOLE_RANK_FILE_BELOW = 64 * 2 ** 20;
/** The per-token fields of a train row (see buildTrainRow). */
const ROW_TOKEN_FIELDS: readonly TokenField[] = [...CP_SHARDED_FIELDS, 'loss_masks'];

export class TrainDumpReader {
  private readonly steps = new Lru<number, TrainStepFiles>(4);
  /** `train_data/`'s names, and those that are not plain files (symlinks among them: checked before use). */
  private listing: { stamp: string; names: string[]; unplain: Set<string> } | undefined;

  constructor(
    private readonly files: DumpFiles,
    /** Another thread that may read a step's rank file directories (see TrainStepFiles' catalog). */
    private readonly catalogHelper: StartCatalogHelper | null = null,
  ) {}

  /** `train_data/` file names, re-read only when the directory changes. */
  private async trainListing(): Promise<string[]> {
    const dir = join(this.files.runDir, TRAIN_DIR);
    let st;
    try {
      st = await this.files.recentStat(dir);
    } catch (e) {
      if (isMissing(e)) return [];
      throw e;
    }
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    if (this.listing && this.listing.stamp === stamp) return this.listing.names;
    if (!st.isDirectory()) {
      // The run still answers from its rollout dumps alone.
      this.files.noteLayout(TRAIN_DIR, `${fileKind(st)}, not a directory: train dumps skipped`);
      this.listing = { stamp, names: [], unplain: new Set() };
      return [];
    }
    const entries = await readdir(dir, { withFileTypes: true });
    const names = entries.map((e) => e.name);
    const unplain = new Set(entries.filter((e) => !e.isFile()).map((e) => e.name));
    this.listing = { stamp, names, unplain };
    return names;
  }

  /** One step's rank files, by rank. */
  async fileNames(rolloutId: number): Promise<RankFileName[]> {
    const out: RankFileName[] = [];
    for (const n of await this.trainListing()) {
      const rank = trainRankOf(n, rolloutId);
      if (rank === null) continue;
      out.push({ name: trainFile(rolloutId, rank), rank, listedRegular: this.listing?.unplain.has(n) === false });
    }
    return out.sort((a, b) => a.rank - b.rank);
  }

  /** One step's rank files (cached per step while its listing is unchanged), or null without train dumps. */
  async step(rolloutId: number): Promise<TrainStepFiles | null> {
    const files = await this.fileNames(rolloutId);
    if (files.length === 0) return null;
    const stamp = files.map((f) => f.name).join('\n');
    const cached = this.steps.get(rolloutId);
    if (cached && cached.stamp === stamp) return cached;
    // A plain file resolves inside the run when its folder does: only the folder and what is not a plain
    // file (a symlink) need resolving.
    await this.files.runPath(TRAIN_DIR);
    const unplain = this.listing?.unplain;
    for (const f of files) if (!unplain || unplain.has(basename(f.name))) await this.files.runPath(f.name);
    const step = new TrainStepFiles(
      this.files.runDir,
      files,
      stamp,
      (name) => this.files.loadTorch(name),
      (name, e) => this.files.loadFailure(name, e),
      this.files.onDecode,
      this.catalogStore(rolloutId, files),
      this.catalogHelper,
    );
    this.steps.set(rolloutId, step);
    return step;
  }

  /**
   * Where a train step's catalog persists (with a cache directory): `train_{id}.catalog.json`, naming each
   * rank file by inode, size, modification and creation time, read back only while every file still has
   * them (a rewritten, replaced, added or removed rank file means another scan).
   */
  private catalogStore(rolloutId: number, files: readonly RankFileName[]): StepCatalogStore | null {
    const cacheDir = this.files.cacheDir;
    if (!cacheDir) return null;
    const path = join(cacheDir, `train_${rolloutId}.catalog.json`);
    return {
      load: async () => {
        let text: string;
        try {
          // Small cache files are read with one blocking read (no round trips on a token read's path).
          text = readFileSync(path, 'utf8');
        } catch {
          return null;
        }
        const kept = parseStepCatalog(text, files);
        if (!kept) return null;
        // Every rank file must still be the one described (the stats run on the thread pool meanwhile).
        const now = await Promise.all(files.map((f) => stat(join(this.files.runDir, f.name)).then(fileIdentity, () => null)));
        return now.every((id, k) => id === kept.sources[k]) ? kept : null;
      },
      save: async (catalog) => {
        const body = JSON.stringify({
          version: TRAIN_CATALOG_VERSION,
          files: files.map((f, k) => [f.name, catalog.sources[k]]),
          twinOf: catalog.twinOf,
          // Twins list the same sizes: only the lowest rank of each set writes them.
          sizes: catalog.sizes.map((s, i) => (catalog.twinOf[i] === i ? s : null)),
          samples: [...catalog.samples],
        });
        await this.files.derived.write(basename(path), () => body);
      },
    };
  }

  /**
   * A reader of per-token row fields that reads tensor bytes straight from the rank archives, keeping at
   * most `capacity` of them (no storage stays cached once its row has been reduced). `wholeFiles` reads each
   * moderate-size archive in one go, for joins that need most of its storages.
   */
  rowReader(capacity: number, wholeFiles: boolean) {
    const archives = new Lru<string, Promise<ZipArchive>>(capacity, (a) => void a.then((x) => x.close()).catch(() => {}));
    const files = this.files;
    return {
      reader(index: TrainIndex): RowFieldReader {
        return async (file: number, row: number, fieldName: TokenField) => {
          const f = index.files[file];
          const v = rowValue(f, fieldName, row);
          if (!(v instanceof Tensor) || f.source.root === null || !f.source.littleEndian) return readNumbers(v);
          try {
            const prefix = `${f.source.root ? `${f.source.root}/` : ''}data/`;
            let archive = archives.get(f.source.path);
            if (!archive) {
              // A join needs most of a rank file's storages: read a file of moderate size in one go. One
              // sample's read needs this row's per-token fields: their storages in a few blocking reads.
              archive = wholeFiles
                ? ZipArchive.open(f.source.path, { wholeFileBelow: WHOLE_RANK_FILE_BELOW })
                : (async () => {
                    const a = ZipArchive.openSync(f.source.path, { wholeFileBelow: 0 });
                    const wanted = [];
                    for (const name of ROW_TOKEN_FIELDS) {
                      const t = rowValue(f, name, row);
                      const e = t instanceof Tensor ? a.entry(`${prefix}${t.storage.key}`) : undefined;
                      // A compressed storage is left to the read that reports it.
                      if (e && e.method === 0 && e.compressedSize === e.size) wanted.push(e);
                    }
                    a.loadSync(wanted);
                    return a;
                  })();
              archives.set(f.source.path, archive);
            }
            const bytes = await (await archive).read(`${prefix}${v.storage.key}`);
            return tensorNumbersFromBytes(v, bytes);
          } catch (e) {
            throw await files.loadFailure(f.file, e);
          }
        };
      },
      async close(): Promise<void> {
        archives.clear();
      },
    };
  }

  /** Settles once the step catalogs asked to be saved so far are written (tests). */
  async saved(): Promise<void> {
    for (const step of this.steps.values()) await step.saved();
  }

  clear(): void {
    this.steps.clear();
  }
}

/**
 * A persisted train step catalog, or null when it is not one for exactly these files (another version, other
 * files, or damage); the caller checks the files still have the identities it names.
 */
function parseStepCatalog(text: string, files: readonly RankFileName[]): StepCatalog | null {
  let kept: { version?: unknown; files?: unknown; twinOf?: unknown; sizes?: unknown; samples?: unknown };
  try {
    kept = JSON.parse(text);
  } catch {
    return null;
  }
  const n = files.length;
  if (kept?.version !== TRAIN_CATALOG_VERSION || !Array.isArray(kept.files) || kept.files.length !== n) return null;
  const sources: string[] = [];
  for (let k = 0; k < n; k++) {
    const f = kept.files[k];
    if (!Array.isArray(f) || f[0] !== files[k].name || typeof f[1] !== 'string') return null;
    sources.push(f[1]);
  }
  const { twinOf, sizes, samples } = kept;
  if (!Array.isArray(twinOf) || twinOf.length !== n || !Array.isArray(sizes) || sizes.length !== n || !Array.isArray(samples)) return null;
  const isInts = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => Number.isSafeInteger(x));
  const byFile: number[][] = [];
  for (let i = 0; i < n; i++) {
    const t = twinOf[i];
    // A twin points at the lowest rank of its set, which points at itself.
    if (!Number.isSafeInteger(t) || t < 0 || t > i || twinOf[t] !== t) return null;
    const own = sizes[t];
    if (!isInts(own)) return null;
    byFile.push(own);
  }
  const known = new Map<number, number[]>();
  for (const e of samples) {
    if (!Array.isArray(e) || e.length !== 2 || !Number.isSafeInteger(e[0]) || e[0] < 0 || e[0] >= n || twinOf[e[0]] !== e[0] || !isInts(e[1])) return null;
    known.set(e[0], e[1]);
  }
  return { sources, twinOf: twinOf as number[], sizes: byFile, samples: known };
}
