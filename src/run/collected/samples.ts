// The samples `rlsight collect` wrote (`samples/{rollout,eval}_{id}.parquet`), read back as the sample rows
// slime's dumps hold: the same fields, in batch order. A step whose `.pending` marker is there without its
// file is still arriving (DumpStillWriting: answered 503 with Retry-After) while the collector runs, and
// incomplete (SlimeDumpError: 422 naming the file) once it has stopped.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseSampleStepFile, PENDING_SUFFIX, SAMPLE_READ_COLUMNS, SAMPLES_DIR, sampleFieldsOfRow, sampleStepFile } from '../../formats/collectedSamples.ts';
import { COLLECTOR_FILE, DASHBOARD_DIR } from '../../formats/dashboard/layout.ts';
import { DumpStillWriting, NotFound, SlimeDumpError } from '../errors.ts';
import type { SlimeDump } from '../slime/dump.ts';
import { pyNumber, type SlimeSample } from '../slime/sample.ts';
import { dumpOrNote, readableDumps, type SampleDumpSource } from '../slime/run.ts';

interface StepFile {
  rolloutId: number;
  evaluation: boolean;
  /** Relative to the run root. */
  name: string;
  path: string;
  hasFile: boolean;
  pending: boolean;
}

/** Whether `dir` holds samples a collector wrote. */
export function hasCollectedSamples(dir: string): boolean {
  const d = join(resolve(dir), SAMPLES_DIR);
  if (!existsSync(d)) return false;
  try {
    return readdirSync(d).some((n) => parseSampleStepFile(n) !== null);
  } catch {
    return false;
  }
}

/** What a `.pending` marker says (empty while the step is arriving, or when the marker is gone). */
function pendingNote(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim().slice(0, 1000);
  } catch {
    return '';
  }
}

/** How many decoded steps stay resident. */
const STEPS_KEPT = 8;

export class CollectedSamples implements SampleDumpSource {
  readonly root: string;
  private steps: StepFile[] = [];
  private readonly cache = new Map<string, { stamp: string; dump: SlimeDump }>();
  private readonly problems: string[] = [];

  constructor(dir: string) {
    this.root = resolve(dir);
    this.refresh();
  }

  refresh(): void {
    const d = join(this.root, SAMPLES_DIR);
    const byStep = new Map<string, StepFile>();
    let names: string[] = [];
    try {
      names = readdirSync(d).sort();
    } catch {
      // no samples yet
    }
    for (const n of names) {
      const p = parseSampleStepFile(n);
      if (p === null) continue;
      const key = `${p.evaluation}:${p.rolloutId}`;
      const file = sampleStepFile(p.rolloutId, p.evaluation);
      const s = byStep.get(key) ?? { rolloutId: p.rolloutId, evaluation: p.evaluation, name: `${SAMPLES_DIR}/${file}`, path: join(d, file), hasFile: false, pending: false };
      if (p.pending) s.pending = true;
      else s.hasFile = true;
      byStep.set(key, s);
    }
    this.steps = [...byStep.values()];
  }

  warnings(): string[] {
    return [...this.problems];
  }

  async rolloutIds(): Promise<{ train: number[]; eval: number[] }> {
    const ids = (evaluation: boolean): number[] => this.steps.filter((s) => s.evaluation === evaluation).map((s) => s.rolloutId).sort((a, b) => a - b);
    return { train: ids(false), eval: ids(true) };
  }

  private find(rolloutId: number, evaluation: boolean): StepFile | undefined {
    return this.steps.find((s) => s.rolloutId === rolloutId && s.evaluation === evaluation);
  }

  async dump(rolloutId: number, evaluation: boolean): Promise<SlimeDump | null> {
    const f = this.find(rolloutId, evaluation);
    if (f === undefined) return null;
    // a step recorded again keeps answering from its previous file until the new one is complete
    if (!f.hasFile && !existsSync(f.path)) {
      // the collector writes into the marker why the step will not be written (samples it could not encode, or what
      // was missing or failing when it stopped)
      const why = f.pending ? pendingNote(f.path + PENDING_SUFFIX) : '';
      if (why !== '') throw new SlimeDumpError(f.name, `${why} (only its .pending marker is there)`);
      // a collector that stopped (it removes collector.json) will not complete the step: no 503 to retry forever
      if (f.pending && !existsSync(join(this.root, DASHBOARD_DIR, COLLECTOR_FILE))) {
        throw new SlimeDumpError(f.name, 'its samples did not all arrive before the collector stopped (only its .pending marker is there)');
      }
      if (f.pending) throw new DumpStillWriting(f.name);
      throw new NotFound(`${evaluation ? 'eval ' : ''}rollout ${rolloutId} is not in this run`);
    }
    let st;
    try {
      st = statSync(f.path);
    } catch {
      throw new NotFound(`${f.name}: no such file (removed since the run was opened)`);
    }
    const stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    const hit = this.cache.get(f.path);
    if (hit && hit.stamp === stamp) return hit.dump;
    const dump = await this.read(f);
    this.cache.delete(f.path);
    this.cache.set(f.path, { stamp, dump });
    while (this.cache.size > STEPS_KEPT) this.cache.delete(this.cache.keys().next().value!);
    return dump;
  }

  private async read(f: StepFile): Promise<SlimeDump> {
    // loaded with the first step read: a server's start path loads no Parquet reader
    const { ParquetFile } = await import('../../formats/parquet.ts');
    const file = await ParquetFile.open(f.path, f.name);
    try {
      const rows = await file.readRows(0, file.numRows, SAMPLE_READ_COLUMNS.filter((c) => file.columnNames.includes(c)));
      const samples: SlimeSample[] = rows.map((row, i) => {
        try {
          const fields = sampleFieldsOfRow(row) as SlimeSample['fields'];
          return { row: i, key: pyNumber(fields.index) ?? null, fields, topPOffsets: null };
        } catch (err) {
          throw new SlimeDumpError(f.name, `row ${i}: ${(err as Error).message}`);
        }
      });
      // a step whose indices repeat (eval datasets numbered from 0 each) is addressed by position, as a slime eval dump is
      const keys = new Set(samples.map((s) => s.key));
      if (keys.size < samples.length) for (const s of samples) s.key = s.row;
      return { file: f.name, rolloutId: f.rolloutId, evaluation: f.evaluation, samples, warnings: [] };
    } finally {
      await file.close();
    }
  }

  readable(rolloutId: number, evaluation: boolean): Promise<SlimeDump | null> {
    return dumpOrNote(
      () => this.dump(rolloutId, evaluation),
      (err) => {
        const msg = err instanceof Error ? err.message : String(err);
        if (!this.problems.includes(msg)) this.problems.push(msg);
      },
    );
  }

  allDumps(evaluation: boolean): Promise<SlimeDump[]> {
    return readableDumps(this, evaluation);
  }

  async *sampleBatches(rolloutId: number, evaluation: boolean): AsyncGenerator<SlimeSample[]> {
    const d = await this.dump(rolloutId, evaluation);
    if (d) yield d.samples;
  }

  /** Bytes of the step's file (none while only its `.pending` marker is there). */
  async bytes(rolloutId: number, evaluation = false): Promise<number> {
    const f = this.find(rolloutId, evaluation);
    if (f === undefined) return 0;
    return stat(f.path).then(
      (st) => st.size,
      () => 0,
    );
  }

  async stamp(rolloutId: number, evaluation: boolean): Promise<string> {
    const f = this.find(rolloutId, evaluation);
    if (f === undefined) return '-';
    try {
      const st = await stat(f.path);
      return `${f.name}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return `${f.name}:-${existsSync(f.path + PENDING_SUFFIX) ? ':pending' : ''}`;
    }
  }
}
