// A TensorBoard logdir read as scalar events: every `events.out.tfevents.*` file below it (a run is the folder
// holding its files), each read from where the last read stopped. A record cut short is left for the next
// read (the writer is still at it); a record whose checksum fails ends that file's reading, with a problem.
import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
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
}

export class TensorBoardLogdir {
  private readonly files = new Map<string, EventFile>();
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
          this.files.set(p, { path: p, run: relative(this.dir, d).split(sep).join('/'), offset: 0, damaged: null });
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
      let fd: number;
      try {
        fd = openSync(f.path, 'r');
      } catch {
        continue;
      }
      try {
        const size = fstatSync(fd).size;
        if (size <= f.offset) continue;
        const buf = Buffer.allocUnsafe(size - f.offset);
        let got = 0;
        while (got < buf.length) {
          const n = readSync(fd, buf, got, buf.length - got, f.offset + got);
          if (n === 0) break;
          got += n;
        }
        const bytes = buf.subarray(0, got);
        let at = 0;
        for (;;) {
          const r = readTfRecord(bytes, at);
          if ('partial' in r) break;
          if ('damaged' in r) {
            f.damaged = `${relative(this.dir, f.path)}: ${r.damaged.replace(/byte (\d+)/, (_, b) => `byte ${f.offset + Number(b)}`)}; the rest of the file is skipped`;
            this.problems.push(f.damaged);
            break;
          }
          at = r.next;
          try {
            const e = decodeScalarEvent(r.data);
            if (e !== null) out.push({ run: f.run, ...e });
          } catch (err) {
            this.problems.push(`${relative(this.dir, f.path)}: an event at byte ${f.offset + at} is not readable (${(err as Error).message}); skipped`);
          }
        }
        f.offset += at;
      } finally {
        closeSync(fd);
      }
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
