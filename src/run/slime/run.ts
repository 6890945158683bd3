// A slime run: its rollout dumps found on disk (the `--dump-details DIR` layout, or the files a
// `--save-debug-rollout-data` template wrote), each decoded on demand and kept while unchanged.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { DumpStillWriting, stillBeingWritten } from '../errors.ts';
import { readSlimeDump, rolloutIdFromName, SlimeDumpError, streamSlimeDump, type SlimeDump } from './dump.ts';
import { sampleIndex, type SlimeSample } from './sample.ts';

export interface SlimeDumpFile {
  path: string;
  /** Shown in answers and errors: relative to the run root. */
  name: string;
  /** From the file name; for a template without a placeholder, read from the dump itself. */
  rolloutId: number | null;
  evaluation: boolean;
}

/** `DIR/rollout_data/{id}.pt` and `eval_{id}.pt`: what slime's `--dump-details DIR` writes. */
export function dumpDetailsFiles(dir: string): SlimeDumpFile[] {
  const root = resolve(dir);
  const data = join(root, 'rollout_data');
  if (!existsSync(data)) return [];
  const out: SlimeDumpFile[] = [];
  for (const name of readdirSync(data).sort()) {
    const m = /^(eval_)?(\d+)\.pt$/.exec(name);
    if (!m) continue;
    const path = join(data, name);
    if (!statSync(path).isFile()) continue;
    out.push({ path, name: relative(root, path), rolloutId: Number(m[2]), evaluation: m[1] !== undefined });
  }
  return out;
}

function globRegex(pattern: string): RegExp {
  const esc = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]');
  return new RegExp(`^${esc}$`);
}

/**
 * The files of `rlsight serve FILE.pt|GLOB`: one file (a template without `{rollout_id}` writes only
 * one), or a glob over one folder (`rollout_*.pt`). Ids come from the names (`rollout_3.pt`,
 * `rollout_eval_0.pt`); a name without a number is read for its `rollout_id`.
 */
export function templateFiles(spec: string): SlimeDumpFile[] {
  const abs = resolve(spec);
  const dir = dirname(abs);
  const pattern = basename(abs);
  let names: string[];
  if (/[*?]/.test(pattern)) {
    if (/[*?]/.test(dir)) throw new SlimeDumpError(spec, 'only the file name may hold * or ?, not the folders');
    if (!existsSync(dir)) throw new SlimeDumpError(spec, `no such folder: ${dir}`);
    const re = globRegex(pattern);
    names = readdirSync(dir).filter((n) => re.test(n)).sort();
    if (names.length === 0) throw new SlimeDumpError(spec, 'no file matches');
  } else {
    if (!existsSync(abs)) throw new SlimeDumpError(spec, 'no such file');
    names = [pattern];
  }
  const out: SlimeDumpFile[] = [];
  for (const name of names) {
    const path = join(dir, name);
    if (!statSync(path).isFile()) continue;
    const id = rolloutIdFromName(name);
    out.push({ path, name, rolloutId: id?.id ?? null, evaluation: id?.evaluation ?? false });
  }
  return out;
}

/** Whether a `--dump-details` folder is slime's layout rather than miles' (which adds dashboards and sidecars). */
export function looksLikeSlimeDir(dir: string): boolean {
  const root = resolve(dir);
  if (!existsSync(join(root, 'rollout_data'))) return false;
  return !['dashboard', 'dashboard_columns', 'trajectory'].some((m) => existsSync(join(root, m)));
}

interface Cached {
  stamp: string;
  dump: SlimeDump;
}

/** How many decoded dumps stay resident. */
export const SLIME_DUMPS_KEPT = 8;

/** Where a run's slime-shaped samples come from: slime's dump files, or the samples a collector recorded. */
export interface SampleDumpSource {
  /** The run's root folder (answers name files relative to it). */
  readonly root: string;
  refresh(): void;
  warnings(): string[];
  rolloutIds(): Promise<{ train: number[]; eval: number[] }>;
  /** The samples of one step, or null when the run has none. */
  dump(rolloutId: number, evaluation: boolean): Promise<SlimeDump | null>;
  allDumps(evaluation: boolean): Promise<SlimeDump[]>;
  /** One step's dump; null when there is none or it cannot be read (reported through warnings()); DumpStillWriting while it is written. */
  readable(rolloutId: number, evaluation: boolean): Promise<SlimeDump | null>;
  /** The samples in order, in batches handed out while the step is still being read. */
  sampleBatches(rolloutId: number, evaluation: boolean): AsyncGenerator<SlimeSample[]>;
  /** Changes whenever the files the step is read from change. */
  stamp(rolloutId: number, evaluation: boolean): Promise<string>;
  /** Bytes of the files a step's read decodes (a train step's unless `evaluation`), when the source can tell. */
  bytes?(rolloutId: number, evaluation?: boolean): Promise<number>;
}

export class SlimeRun implements SampleDumpSource {
  private readonly cache = new Map<string, Cached>();
  private files: SlimeDumpFile[];
  private readonly problems: string[] = [];

  constructor(
    /** The run's root folder (answers name files relative to it). */
    readonly root: string,
    private readonly discover: () => SlimeDumpFile[],
  ) {
    this.files = discover();
  }

  static fromDumpDetails(dir: string): SlimeRun {
    const root = resolve(dir);
    return new SlimeRun(root, () => dumpDetailsFiles(root));
  }

  static fromTemplate(spec: string): SlimeRun {
    return new SlimeRun(dirname(resolve(spec)), () => templateFiles(spec));
  }

  /** Looks for dumps written since the last call. */
  refresh(): void {
    this.files = this.discover();
  }

  warnings(): string[] {
    return [...this.problems];
  }

  /** Train and eval rollout ids, ascending. Files named without an id are opened to learn theirs. */
  async rolloutIds(): Promise<{ train: number[]; eval: number[] }> {
    const train = new Set<number>();
    const ev = new Set<number>();
    for (const f of this.files) {
      let id = f.rolloutId;
      if (id === null) {
        try {
          id = (await this.read(f)).rolloutId;
        } catch (err) {
          if (!(err instanceof DumpStillWriting)) this.note(err);
          continue;
        }
      }
      (f.evaluation ? ev : train).add(id);
    }
    const asc = (s: Set<number>): number[] => [...s].sort((a, b) => a - b);
    return { train: asc(train), eval: asc(ev) };
  }

  private note(err: unknown): void {
    const msg = err instanceof Error ? err.message : String(err);
    if (!this.problems.includes(msg)) this.problems.push(msg);
  }

  private async read(f: SlimeDumpFile): Promise<SlimeDump> {
    const { stamp, hit } = this.cached(f);
    if (hit) return hit;
    try {
      return this.keep(f, stamp, await readSlimeDump(f.path, { name: f.name }));
    } catch (err) {
      throw stillWriting(f, err);
    }
  }

  /** A dump kept from before, if its file is unchanged, with the file's stamp. */
  private cached(f: SlimeDumpFile): { stamp: string; hit: SlimeDump | null } {
    let st;
    try {
      st = statSync(f.path);
    } catch {
      throw new SlimeDumpError(f.name, 'no such file (removed since the run was opened)');
    }
    const stamp = `${st.size}:${st.mtimeMs}`;
    const hit = this.cache.get(f.path);
    if (!hit || hit.stamp !== stamp) return { stamp, hit: null };
    this.cache.delete(f.path);
    this.cache.set(f.path, hit);
    return { stamp, hit: hit.dump };
  }

  private keep(f: SlimeDumpFile, stamp: string, dump: SlimeDump): SlimeDump {
    if (f.evaluation) dump.evaluation = true;
    this.cache.set(f.path, { stamp, dump });
    while (this.cache.size > SLIME_DUMPS_KEPT) this.cache.delete(this.cache.keys().next().value!);
    return dump;
  }

  /**
   * The samples of one rollout step in order, handed out while its dump is still being decoded (at once
   * when it is kept already); the finished dump is kept as `dump` keeps it. Nothing for a step the run lacks.
   */
  async *sampleBatches(rolloutId: number, evaluation: boolean): AsyncGenerator<SlimeSample[]> {
    const f = this.files.find((x) => x.evaluation === evaluation && x.rolloutId === rolloutId);
    if (!f) {
      // Files named without an id are opened whole to learn theirs.
      const d = await this.dump(rolloutId, evaluation);
      if (d) yield d.samples;
      return;
    }
    const { stamp, hit } = this.cached(f);
    if (hit) {
      yield hit.samples;
      return;
    }
    try {
      for await (const part of streamSlimeDump(f.path, { name: f.name })) {
        if (part.samples.length > 0) yield part.samples;
        if (part.dump) this.keep(f, stamp, part.dump);
      }
    } catch (err) {
      throw stillWriting(f, err);
    }
  }

  /** The files a step's dump may come from: its own, and any named without an id (which may turn out to hold it). */
  private stepFiles(rolloutId: number, evaluation: boolean): SlimeDumpFile[] {
    return this.files.filter((f) => f.evaluation === evaluation && (f.rolloutId === rolloutId || f.rolloutId === null));
  }

  /** Bytes of the dump files a step's read decodes (a train step's unless `evaluation`). */
  async bytes(rolloutId: number, evaluation = false): Promise<number> {
    const sizes = await Promise.all(this.stepFiles(rolloutId, evaluation).map((f) => stat(f.path).then((st) => st.size, () => 0)));
    return sizes.reduce((a, b) => a + b, 0);
  }

  /** Changes whenever a file the step's dump may come from changes: the device, inode, size and mtime of each. */
  async stamp(rolloutId: number, evaluation: boolean): Promise<string> {
    const files = this.stepFiles(rolloutId, evaluation);
    const parts = await Promise.all(
      files.map((f) =>
        stat(f.path).then(
          (st) => `${f.name}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`,
          () => `${f.name}:-`,
        ),
      ),
    );
    return parts.join('|');
  }

  /** The dump of one rollout step, or null when the run has none. */
  async dump(rolloutId: number, evaluation: boolean): Promise<SlimeDump | null> {
    for (const f of this.files) {
      if (f.evaluation !== evaluation) continue;
      if (f.rolloutId === rolloutId) return this.read(f);
    }
    for (const f of this.files) {
      if (f.evaluation !== evaluation || f.rolloutId !== null) continue;
      const d = await this.read(f);
      if (d.rolloutId === rolloutId) return d;
    }
    return null;
  }

  /** One step's dump, or null when there is none or it cannot be read (reported through warnings()). */
  readable(rolloutId: number, evaluation: boolean): Promise<SlimeDump | null> {
    return dumpOrNote(() => this.dump(rolloutId, evaluation), (err) => this.note(err));
  }

  /** Every dump, in id order; unreadable ones are skipped and reported through warnings(). */
  allDumps(evaluation: boolean): Promise<SlimeDump[]> {
    return readableDumps(this, evaluation);
  }
}

/**
 * A dump that fails to decode while its file is younger than the freshness window is taken to be still being
 * written (as a miles run's); a refused file (a directory, a FIFO, a link out of the run) never becomes one.
 */
function stillWriting(f: SlimeDumpFile, err: unknown): unknown {
  if (!(err instanceof SlimeDumpError)) return err;
  try {
    if (stillBeingWritten(err, statSync(f.path).mtimeMs, Date.now())) return new DumpStillWriting(f.name, err);
  } catch {
    // gone since: the failure as it was
  }
  return err;
}

/** A sample by its key (`Sample.index`; its position in an eval dump). */
export function sampleByIndex(dump: SlimeDump, index: number): SlimeSample | undefined {
  return dump.samples.find((s) => sampleIndex(s) === index);
}

/** Every readable dump of `source` of one kind, in id order (those still being written are left for later). */
export async function readableDumps(source: SampleDumpSource, evaluation: boolean): Promise<SlimeDump[]> {
  const ids = await source.rolloutIds();
  const out: SlimeDump[] = [];
  for (const id of evaluation ? ids.eval : ids.train) {
    try {
      const d = await source.readable(id, evaluation);
      if (d) out.push(d);
    } catch (err) {
      if (!(err instanceof DumpStillWriting)) throw err;
    }
  }
  return out;
}

/**
 * `dump()`, or null when it fails (`note` is told why, for the run's warnings); a dump still being written is no
 * problem of the run's (DumpStillWriting goes on: it is read once it is whole).
 */
export async function dumpOrNote(dump: () => Promise<SlimeDump | null>, note: (err: unknown) => void): Promise<SlimeDump | null> {
  try {
    return await dump();
  } catch (err) {
    if (err instanceof DumpStillWriting) throw err;
    note(err);
    return null;
  }
}
