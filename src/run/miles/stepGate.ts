// Which step is decoded next: a cold step takes both cores and a few hundred MiB for a second or more, so
// steps decode one at a time, a step someone asked for ahead of those a whole-run answer reads in the
// background.
import type { StepPriority } from '../model.ts';

/**
 * How long a background read waits before it may take an idle gate: the requests of one page load arrive
 * within a few ms of each other, and the step the page asks for should not queue behind a whole-run read.
 * A background read that comes within this long of the end of another continues a whole-run read (one step
 * after another) and waits for none: a step asked meanwhile still goes ahead of it whenever both wait.
 */
export const BACKGROUND_GRACE_MS = 100;

/** One step's place in the gate: its turn comes once, when it is the best one waiting. */
export interface GateTicket {
  /** Settles when this ticket may decode. */
  readonly turn: Promise<void>;
  /** An asker of the same step joined: it waits as an asked step from now on. */
  ask(): void;
  /** Done (or failed): the next ticket's turn. Idempotent. */
  release(): void;
}

interface Waiting {
  priority: StepPriority;
  graceUntil: number;
  admit: () => void;
}

export class StepGate {
  private inside = false;
  private readonly waiting: Waiting[] = [];
  private graceTimer: NodeJS.Timeout | undefined;
  /** When the last background read that held the gate let it go. */
  private backgroundEnded = -Infinity;

  constructor(private readonly graceMs = BACKGROUND_GRACE_MS) {}

  /** Tickets holding or waiting for the gate (tests). */
  get load(): { inside: boolean; waiting: number } {
    return { inside: this.inside, waiting: this.waiting.length };
  }

  enter(priority: StepPriority): GateTicket {
    let admit!: () => void;
    const turn = new Promise<void>((r) => (admit = r));
    const now = performance.now();
    const continues = now - this.backgroundEnded < this.graceMs;
    const w: Waiting = { priority, graceUntil: priority === 'background' && !continues ? now + this.graceMs : 0, admit };
    this.waiting.push(w);
    let released = false;
    const ticket: GateTicket = {
      turn,
      ask: () => {
        if (w.priority === 'asked') return;
        w.priority = 'asked';
        this.next();
      },
      release: () => {
        if (released) return;
        released = true;
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        else {
          this.inside = false;
          if (w.priority === 'background') this.backgroundEnded = performance.now();
        }
        this.next();
      },
    };
    this.next();
    return ticket;
  }

  /** Admits the best waiting ticket when the gate is free: asked ones first, then background ones past their grace. */
  private next(): void {
    if (this.inside || this.waiting.length === 0) return;
    let pick = this.waiting.findIndex((w) => w.priority === 'asked');
    if (pick < 0) {
      const now = performance.now();
      pick = this.waiting.findIndex((w) => w.graceUntil <= now);
      if (pick < 0) {
        const soonest = Math.min(...this.waiting.map((w) => w.graceUntil));
        clearTimeout(this.graceTimer);
        // (not unref'd: a command awaiting a background read has nothing else keeping it alive)
        this.graceTimer = setTimeout(() => this.next(), Math.max(1, soonest - now));
        return;
      }
    }
    clearTimeout(this.graceTimer);
    const [w] = this.waiting.splice(pick, 1);
    this.inside = true;
    w.admit();
  }
}
