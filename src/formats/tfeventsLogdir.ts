// A TensorBoard logdir read as scalar events: every `events.out.tfevents.*` file below it (a run is the folder
// holding its files), each read from where the last read stopped. A record cut short is left for the next
// read (the writer is still at it); a record whose checksum fails ends that file's reading, with a problem.
// `TensorBoardNaming` names the scalars as metric keys, each name fixed when first given (serve and collect alike).
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { readGainedSync } from './fileAccess.ts';
import { roundedStepNote } from './roundedStep.ts';
import { decodeScalarEvent, readTfRecord } from './tfevents.ts';

const EVENT_FILE = /^events\.out\.tfevents\./;
/** Folders below the logdir searched for runs. */
const MAX_DEPTH = 4;

/** The scalars of one event of one run. */
export interface TensorBoardEvent {
  /** The run's folder relative to the logdir (`''` for the logdir itself). */
  run: string;
  wallTime: number;
  step: number;
  scalars: { tag: string; value: number }[];
}

interface EventFile {
  path: string;
  run: string;
  offset: number;
  /** Why reading stopped for good (a checksum failed), or null. */
  damaged: string | null;
  /** Whether a step beyond ±2^53 was rounded (said once per file). */
  roundedStep: boolean;
}

export class TensorBoardLogdir {
  private readonly files = new Map<string, EventFile>();
  /** Run folder → tag → plugin, from the tag's first value carrying metadata (per run, as EventAccumulator keeps it). */
  private readonly plugins = new Map<string, Map<string, string>>();
  readonly problems: string[] = [];

  constructor(readonly dir: string) {}

  /** The run folders seen so far. */
  runs(): string[] {
    return [...new Set([...this.files.values()].map((f) => f.run))].sort();
  }

  private scan(): void {
    const walk = (d: string, depth: number): void => {
      let names: string[];
      try {
        names = readdirSync(d).sort();
      } catch {
        return;
      }
      for (const name of names) {
        const p = join(d, name);
        let st;
        try {
          st = statSync(p);
        } catch {
          continue;
        }
        if (st.isDirectory()) {
          if (depth < MAX_DEPTH) walk(p, depth + 1);
        } else if (st.isFile() && EVENT_FILE.test(name) && !this.files.has(p)) {
          this.files.set(p, { path: p, run: relative(this.dir, d).split(sep).join('/'), offset: 0, damaged: null, roundedStep: false });
        }
      }
    };
    walk(this.dir, 0);
  }

  /** The events appended since the last call (new files included), file by file in name order. */
  read(): TensorBoardEvent[] {
    this.scan();
    const out: TensorBoardEvent[] = [];
    for (const f of [...this.files.values()].sort((a, b) => (a.path < b.path ? -1 : 1))) {
      if (f.damaged !== null) continue;
      const bytes = readGainedSync(f.path, f.offset);
      if (bytes === null || bytes.length === 0) continue;
      let plugins = this.plugins.get(f.run);
      if (plugins === undefined) this.plugins.set(f.run, (plugins = new Map()));
      let at = 0;
      for (;;) {
        const r = readTfRecord(bytes, at);
        if ('partial' in r) break;
        if ('damaged' in r) {
          f.damaged = `${relative(this.dir, f.path)}: ${r.damaged.replace(/byte (\d+)/, (_, b) => `byte ${f.offset + Number(b)}`)}; the rest of the file is skipped`;
          this.problems.push(f.damaged);
          break;
        }
        const start = f.offset + at;
        at = r.next;
        try {
          const e = decodeScalarEvent(r.data, plugins);
          if (e === null) continue;
          if (e.exactStep !== undefined && !f.roundedStep) {
            f.roundedStep = true;
            this.problems.push(`${relative(this.dir, f.path)}: the event at byte ${start}: ${roundedStepNote(e.step, e.exactStep)}`);
          }
          out.push({ run: f.run, wallTime: e.wallTime, step: e.step, scalars: e.scalars });
        } catch (err) {
          this.problems.push(`${relative(this.dir, f.path)}: the event at byte ${start} is not readable (${(err as Error).message}); skipped`);
        }
      }
      f.offset += at;
    }
    return out;
  }
}

/** The step key TensorBoard scalars are served on (the writer's global step). */
export const TENSORBOARD_STEP_KEY = 'tensorboard/step';

/** A scalar's metric key: its tag, prefixed by its run folder when the logdir holds several runs. */
export function tensorBoardKey(run: string, tag: string, severalRuns: boolean): string {
  return severalRuns && run !== '' ? `${run}/${tag}` : tag;
}

/** What a key the run logs itself becomes when a scalar has the same name: `tensorboard/KEY`. */
export function apartKey(key: string): string {
  return `tensorboard/${key}`;
}

/**
 * How the scalars of a logdir are named as metric keys. Each choice is fixed when it is first made, so a folder
 * or a key of the run appearing later renames nothing already named: a run folder's keys are its bare tags when
 * it is the only folder seen so far, else `RUN/TAG`; a key equal to one the run logs itself (one of its metric
 * or step keys when the key is first seen) becomes `tensorboard/KEY`, so the two histories stay apart.
 */
export class TensorBoardNaming {
  /** Run folder → whether its keys are `RUN/TAG`. */
  readonly prefixed = new Map<string, boolean>();
  /** Key (its run folder included) → whether it is `tensorboard/KEY`. */
  readonly apart = new Map<string, boolean>();
  /** The choices made since the last `settle`, for `undo`. */
  private made: [Map<string, boolean>, string][] = [];

  constructor(
    protected readonly logdir: TensorBoardLogdir,
    /** The run's own metric and step keys, asked when a key is first seen. */
    protected readonly ownKeys: () => ReadonlySet<string>,
  ) {}

  /** A folder seen for the first time: bare tags only when it is alone in the logdir and no other was named. */
  protected newRunPrefixed(e: TensorBoardEvent): boolean {
    return this.prefixed.size > 0 || this.logdir.runs().some((r) => r !== e.run);
  }

  /** A key seen for the first time: apart when the run logs that key itself. */
  protected newKeyApart(key: string): boolean {
    return this.ownKeys().has(key);
  }

  private choose(map: Map<string, boolean>, name: string, choice: () => boolean): boolean {
    let c = map.get(name);
    if (c === undefined) {
      map.set(name, (c = choice()));
      this.made.push([map, name]);
    }
    return c;
  }

  /** The metrics of `e`, its scalars under their keys (naming its folder and keys seen for the first time). */
  metrics(e: TensorBoardEvent): Record<string, number> {
    const prefixed = e.run !== '' && this.choose(this.prefixed, e.run, () => this.newRunPrefixed(e));
    const metrics: Record<string, number> = {};
    for (const s of e.scalars) {
      const key = tensorBoardKey(e.run, s.tag, prefixed);
      metrics[this.choose(this.apart, key, () => this.newKeyApart(key)) ? apartKey(key) : key] = s.value;
    }
    return metrics;
  }

  /** Whether choices were made since the last `settle` (ones a caller keeping them has to save). */
  get unsettled(): boolean {
    return this.made.length > 0;
  }

  /** The choices made so far are kept. */
  settle(): void {
    this.made = [];
  }

  /** Takes back the choices made since the last `settle` (they could not be kept): they are made again when next needed. */
  undo(): void {
    for (const [map, name] of this.made) map.delete(name);
    this.made = [];
  }
}
