// The miles format: a `--dump-details` directory (rollout_data/, train_data/, dashboard_columns/, trajectory/,
// tokenizer/) with the `dashboard/` telemetry streams, opened as a RunModel.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { damageOf, NotFound } from '../errors.ts';
import type { ConversationRecord, OpenRunOptions, RolloutIds, RunAdapter, RunModel, SampleTextRecord, SampleTokenRecord, StepPriority, StepRecords } from '../model.ts';
import { confinedNodeIo } from '../telemetry/io.ts';
import { TelemetryStore } from '../telemetry/store.ts';
import { telemetryWarningText } from '../telemetry/records.ts';
import { DumpReader, type DumpReaderOptions } from './reader.ts';
import { foreground } from '../foreground.ts';
import { chatText } from './sampleText.ts';
import { BackgroundWarmUp, WARM_UP_DELAY_MS } from '../telemetry/backgroundWarmUp.ts';
import { MIRROR_DIR, ROLLOUT_DIR, rolloutFile, TRAIN_DIR, trajectoryFile } from '../../formats/miles/layout.ts';
import { DASHBOARD_DIR } from '../../formats/dashboard/layout.ts';

/** Damage reports kept (one per damaged file and problem; a run with more has bigger problems). */
const MAX_NOTED_DAMAGE = 1000;

/** The dump folders of a miles run, each with the kind of file it holds. */
const DUMP_MARKERS: readonly [string, string][] = [
  [ROLLOUT_DIR, '.pt'],
  [TRAIN_DIR, '.pt'],
  [MIRROR_DIR, '.parquet'],
];

/**
 * Whether `dir` is a miles run: it has the `dashboard/` its collector writes (or something in that place), or a
 * dump folder holding a file of its kind. A folder merely named like one (`rollout_data/` of JSON decodes) is not.
 */
function looksLikeMilesRun(dir: string): boolean {
  if (existsSync(join(dir, DASHBOARD_DIR))) return true;
  return DUMP_MARKERS.some(([folder, ext]) => {
    const p = join(dir, folder);
    if (!isDir(p)) return existsSync(p);
    try {
      return readdirSync(p).some((name) => name.endsWith(ext));
    } catch {
      return true;
    }
  });
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** A file's identity and version (`ino:size:mtime`), or null when there is no such file. */
function fileStamp(path: string | null): string | null {
  if (path === null) return null;
  try {
    const st = statSync(path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
}

/** Whether a run of this process has started its spare decode worker (one per process). */
let spareTaken = false;

class MilesRun implements RunModel {
  readonly format = 'miles';
  readonly roots: readonly string[];
  private readonly tokenizerDir: boolean;
  /**
   * Damage reports of failed reads, deduplicated, each with the stamp of the file it names (null: no file
   * found by its name): a report whose file is gone or was rewritten since is dropped (a read of the new file
   * reports it again if it is still damaged).
   */
  private readonly damaged = new Map<string, string | null>();
  /** When the damaged files were last stat'ed (ms). */
  private damageCheckedAt = 0;
  /** Problems of the run's top-level layout (a `dashboard` that is a file). */
  private readonly layout: string[] = [];
  private readonly warmUp: BackgroundWarmUp;

  constructor(
    readonly dir: string,
    readonly telemetry: TelemetryStore,
    private readonly dumps: DumpReader,
    readonly cacheDir: string | null,
  ) {
    this.roots = [dir, ...(cacheDir ? [cacheDir] : [])];
    this.warmUp = new BackgroundWarmUp(telemetry, cacheDir !== null);
    // once a server is asked anything, the thread of the first step read gets ready while the viewer loads
    // (for the first run opened that has a step to read: a server of many runs starts one such thread, not one per run)
    void foreground
      .firstRequest()
      .then(() => {
        if (!spareTaken) spareTaken = dumps.prepareDecodeWorker();
      })
      .catch(() => {});
    this.tokenizerDir = isDir(join(dir, 'tokenizer'));
    const dashboard = join(dir, 'dashboard');
    if (existsSync(dashboard) && !isDir(dashboard)) this.layout.push('dashboard: not a directory: telemetry skipped');
  }

  rolloutIds(): Promise<RolloutIds> {
    return this.dumps.rolloutIds();
  }

  /** See RunModel.getReady: the decode thread of the newest step's read, and that step's rank file catalog read on it. */
  getReady(): boolean {
    if (spareTaken) return false;
    spareTaken = this.dumps.getReady();
    return spareTaken;
  }

  /** Whether a decode worker started ahead of the first step read still waits for it. */
  get decodeWorkerWaiting(): boolean {
    return this.dumps.decodeWorkerWaiting;
  }

  step(rolloutId: number, evaluation: boolean, priority?: StepPriority, signal?: AbortSignal): Promise<StepRecords> {
    return this.noted(this.dumps.step(rolloutId, evaluation, priority, signal));
  }

  stepPreview(rolloutId: number, evaluation: boolean, signal?: AbortSignal, first = false): Promise<{ records: StepRecords; complete: boolean; partial: boolean }> {
    return this.noted(this.dumps.stepPreview(rolloutId, evaluation, signal, first));
  }

  sampleTokens(rolloutId: number, sampleIndex: number, evaluation: boolean): Promise<SampleTokenRecord> {
    return this.noted(this.dumps.sampleTokens(rolloutId, sampleIndex, evaluation));
  }

  conversations(rolloutId: number, evaluation: boolean): Promise<ReadonlyMap<number, ConversationRecord> | null> {
    return this.noted(this.dumps.conversations(rolloutId, evaluation));
  }

  /** The dump's text fields, with the recorded conversation (when there is one) as `conversation`. */
  async sampleTexts(rolloutId: number, evaluation: boolean): Promise<SampleTextRecord[]> {
    const out: SampleTextRecord[] = [];
    for await (const batch of this.sampleTextBatches(rolloutId, evaluation)) for (const t of batch) out.push(t);
    return out;
  }

  /** `sampleTexts` in batches handed out while the rollout dump is decoded (the sidecar is read first). */
  async *sampleTextBatches(rolloutId: number, evaluation: boolean): AsyncGenerator<SampleTextRecord[]> {
    const conversations = await this.dumps.conversations(rolloutId, evaluation);
    for await (const batch of this.dumps.sampleTextBatches(rolloutId, evaluation)) {
      yield batch.map((t) => {
        const conv = conversations?.get(t.sampleIndex);
        return conv && Array.isArray(conv.messages) ? { ...t, fields: { ...t.fields, conversation: chatText(conv.messages) } } : t;
      });
    }
  }

  stepBytes(rolloutId: number, atMost?: number): Promise<number> {
    return this.dumps.stepBytes(rolloutId, atMost);
  }

  /** The rollout dump's and the sidecar's mtime and size. */
  async stepStamp(rolloutId: number, evaluation: boolean): Promise<string> {
    const parts = await Promise.all(
      [rolloutFile(rolloutId, evaluation), trajectoryFile(rolloutId, evaluation)].map((name) =>
        stat(join(this.dir, name)).then(
          (st) => `${st.mtimeMs}:${st.size}`,
          () => '-',
        ),
      ),
    );
    return parts.join('|');
  }

  hasTokenizer(): boolean {
    return this.tokenizerDir;
  }

  async advance(): Promise<void> {
    this.telemetry.follow();
    this.startWarmUp();
  }

  /**
   * Persists every hour of telemetry not yet in the cache directory in the background (see
   * BackgroundWarmUp); restarted by `advance()` when a live run grows.
   */
  startWarmUp(delayMs = 0): void {
    this.warmUp.start(delayMs);
  }

  /**
   * Everything found damaged so far, one line per problem naming the file relative to the run: telemetry
   * lines and partitions skipped, layout problems met while listing, and each dump a request found damaged.
   */
  warnings(): string[] {
    const scrub = (m: string): string => m.split(`${this.dir}/`).join('');
    this.forgetMendedDamage();
    return [
      ...this.layout,
      ...this.telemetry.warnings().map(telemetryWarningText),
      ...this.dumps.warnings().map(scrub),
      ...[...this.damaged.keys()].map(scrub),
    ];
  }

  /** Records the damage a failed read reports (and rethrows the failure unchanged). */
  private noted<T>(p: Promise<T>): Promise<T> {
    return p.catch((e: unknown) => {
      const d = damageOf(e);
      if (d !== null && !this.damaged.has(d) && this.damaged.size < MAX_NOTED_DAMAGE) this.damaged.set(d, fileStamp(this.damagedFile(d)));
      throw e;
    });
  }

  /** The file a damage report names (`file: problem`, the file relative to the run or absolute), or null. */
  private damagedFile(report: string): string | null {
    const cut = report.indexOf(': ');
    return cut > 0 ? resolve(this.dir, report.slice(0, cut)) : null;
  }

  /** Drops the reports whose file was removed or rewritten since (looked at once a second at most). */
  private forgetMendedDamage(): void {
    const now = Date.now();
    if (this.damaged.size === 0 || now - this.damageCheckedAt < 1000) return;
    this.damageCheckedAt = now;
    for (const [report, stamp] of this.damaged) {
      if (stamp !== null && fileStamp(this.damagedFile(report)) !== stamp) this.damaged.delete(report);
    }
  }

  async close(): Promise<void> {
    this.warmUp.close();
    this.telemetry.close();
    await this.dumps.close();
  }
}

/** An open miles run with its concrete telemetry store (what tests of the store's caches look into). */
export type MilesRunModel = RunModel & { readonly telemetry: TelemetryStore; readonly decodeWorkerWaiting: boolean };

/** Opens a miles run; `reader` tunes the dump reader (tests observe decodes, move the worker threshold). */
export async function openMilesRun(runDir: string, opts: OpenRunOptions & { reader?: DumpReaderOptions } = {}): Promise<MilesRunModel> {
  const dir = resolve(runDir);
  if (!isDir(dir)) throw new NotFound('the run directory does not exist');
  const dumps = await DumpReader.open(dir, { ...opts.reader, tensorLru: opts.tensorLru ?? opts.reader?.tensorLru, cacheDir: opts.cacheDir ?? opts.reader?.cacheDir });
  // Telemetry files are read only inside the run once symlinks resolve (a link out of it is skipped, with a warning).
  const telemetry = TelemetryStore.open(join(dir, 'dashboard'), {
    cacheDir: opts.cacheDir ? resolve(opts.cacheDir) : undefined,
    memoryBudget: opts.memoryBudget,
    io: confinedNodeIo(dir),
  });
  const run = new MilesRun(dir, telemetry, dumps, opts.cacheDir ? resolve(opts.cacheDir) : null);
  run.startWarmUp(WARM_UP_DELAY_MS);
  return run;
}

export const milesAdapter: RunAdapter = {
  format: 'miles',
  detect: looksLikeMilesRun,
  open: (dir, opts) => openMilesRun(dir, opts),
};
