// The run's lane index: `lane_catalog.json` when the writer keeps one, else the lanes folded from the
// streams (gpu_util rows, phase events, topology snapshots), each file folded once and tails after.
import { join } from 'node:path';
import type { GpuUtilBlock } from '../../formats/columns/gpuUtilBlock.ts';
import type { LaneTable, StringTable } from '../../formats/columns/interning.ts';
import type { TelemetryIo } from './io.ts';
import { stampOf } from './io.ts';
import type { LaneFacts } from './laneCatalog.ts';
import { LaneScan, laneEntries, MAX_LANE_CATALOG_BYTES, parseLaneCatalog } from './laneCatalog.ts';
import type { PartitionFile } from './partitionListing.ts';
import type { PhaseBlock } from '../../formats/columns/phaseBlock.ts';
import type { LaneEntry, TopologySnapshot } from './records.ts';
import type { WarnLine } from './flatStreams.ts';

/** Where the scan fallback reads lanes from. */
export interface LaneSources {
  readonly lanes: LaneTable;
  readonly strings: StringTable;
  topologySnapshots(): readonly TopologySnapshot[];
  gpuFiles(): readonly PartitionFile[];
  gpuBlock(f: PartitionFile): GpuUtilBlock;
  phaseFiles(): readonly PartitionFile[];
  phaseBlock(f: PartitionFile): PhaseBlock;
}

export class LaneIndex {
  private catalogStamp = '';
  private catalogFacts: LaneFacts[] | null = null;
  private readonly scan = new LaneScan();
  private readonly folded = new Map<string, { size: number; rows: number }>();
  private topologyFolded = 0;
  private cache: { key: string; entries: LaneEntry[] } | null = null;
  private changes = 0;

  constructor(
    private readonly dir: string,
    private readonly io: TelemetryIo,
    private readonly warn: WarnLine,
    private readonly sources: LaneSources,
  ) {}

  /** Re-reads `lane_catalog.json` when it was rewritten (or appeared, or vanished). */
  readCatalog(): void {
    this.foldTopology();
    const path = join(this.dir, 'lane_catalog.json');
    // A catalog that exists but is not read (a FIFO, a directory, a link out of the run) is reported, not opened.
    const refused = this.io.refusal?.(path) ?? null;
    if (refused !== null) this.warn('lane_catalog.json', 0, refused);
    const stamp = stampOf(this.io, path);
    if (stamp === this.catalogStamp) return;
    this.catalogStamp = stamp;
    if (stamp === '') {
      this.catalogFacts = null;
      return;
    }
    try {
      // The size is checked before the read: a huge catalog is refused without being held in memory.
      const size = this.io.stat(path)?.size ?? 0;
      if (size > MAX_LANE_CATALOG_BYTES) throw new Error(`${size} bytes exceed the limit of ${MAX_LANE_CATALOG_BYTES}`);
      this.catalogFacts = parseLaneCatalog(this.io.readText(path));
    } catch (err) {
      this.warn('lane_catalog.json', 1, `unreadable lane catalog, lanes are scanned from the streams instead: ${(err as Error).message}`);
      this.catalogFacts = null;
    }
  }

  /** Whether lanes come from `lane_catalog.json` (true) or the stream scan fallback (false). */
  hasCatalog(): boolean {
    return this.catalogFacts !== null;
  }

  /** Entries computed before (null when never asked): what a follow compares against. */
  known(): readonly LaneEntry[] | null {
    return this.cache?.entries ?? null;
  }

  /**
   * `[{node, gpu, ranks, engine_addrs, roles, index}]` in lane order. The object stays the same while its
   * content does, so a new object means a change.
   */
  entries(): readonly LaneEntry[] {
    let key: string;
    let facts: Iterable<LaneFacts>;
    if (this.catalogFacts !== null) {
      key = `catalog:${this.catalogStamp}`;
      facts = this.catalogFacts;
    } else {
      this.foldStreams();
      key = `scan:${this.scan.version}`;
      facts = this.scan.facts();
    }
    if (this.cache === null || this.cache.key !== key) {
      const entries = laneEntries(facts);
      if (this.cache === null || JSON.stringify(entries) !== JSON.stringify(this.cache.entries)) {
        this.cache = { key, entries };
        this.changes++;
      } else {
        this.cache = { key, entries: this.cache.entries };
      }
    }
    return this.cache.entries;
  }

  /** Changes whenever `entries()` does. */
  get version(): number {
    this.entries();
    return this.changes;
  }

  /** The scan fallback's lanes, whatever the catalog says (the two agree on a healthy run). */
  scanned(): LaneEntry[] {
    this.foldStreams();
    return laneEntries(this.scan.facts());
  }

  private foldTopology(): void {
    const snaps = this.sources.topologySnapshots();
    for (; this.topologyFolded < snaps.length; this.topologyFolded++) this.scan.addTopology(snaps[this.topologyFolded]);
  }

  /** Folds every gpu_util and phases file not folded at its current size (reads each partition once). */
  private foldStreams(): void {
    this.foldTopology();
    const src = this.sources;
    const fold = <B extends { length: number }>(stream: string, files: readonly PartitionFile[], block: (f: PartitionFile) => B, each: (b: B, from: number) => void): void => {
      for (const f of files) {
        const id = `${stream}/${f.key}`;
        const seen = this.folded.get(id);
        if (seen !== undefined && seen.size === f.size) continue;
        const b = block(f);
        each(b, seen?.rows ?? 0);
        this.folded.set(id, { size: f.size, rows: b.length });
      }
    };
    fold('gpu_util', src.gpuFiles(), (f) => src.gpuBlock(f), (b, from) => {
      const lane = b.lane;
      const seen = new Uint8Array(src.lanes.size);
      for (let i = from; i < b.length; i++) {
        const id = lane[i];
        if (seen[id]) continue;
        seen[id] = 1;
        this.scan.addGpu(src.lanes.node(id), src.lanes.gpu(id));
      }
    });
    fold('phases', src.phaseFiles(), (f) => src.phaseBlock(f), (b, from) => {
      const starts = b.gpuStart;
      const list = b.gpuList;
      for (let i = from; i < b.length; i++) {
        this.scan.addPhase(src.strings.str(b.node[i]), list.subarray(starts[i], starts[i + 1]), b.rank[i], src.strings.str(b.role[i]));
      }
    });
  }
}
