// What the step-wide answers (the health board, the `dump/*` series) take of each train step: a few numbers and
// lines per step, kept once its dump is read (on disk too with a cache directory), so no step is decoded twice
// for them. The server answers over the steps read so far while the others are read in the background, one
// at a time and behind any step someone asked for; the commands read every step before answering.
import type { DerivedEntry, StepPriority } from '../run/model.ts';
import { damageOf, DumpStillWriting, NotFound } from '../run/errors.ts';
import type { RolloutTable, StepCoverage } from '../wire/index.ts';
import { healthStepFacts, type HealthStepFacts } from './health.ts';
import { stepAggregate, type StepAggregate } from './rollouts.ts';

/** The derived entry the facts are kept in (with a cache directory). */
export const STEP_FACTS_ENTRY = 'step-facts.json';

/** Bumped whenever what a step's facts hold, or how they are computed, changes: older entries are read again. */
const FACTS_VERSION = 2;

/** One train step as the step-wide answers see it; a damaged step has no aggregate (its health row says why). */
export interface StepFacts {
  step: number;
  health: HealthStepFacts;
  aggregate: StepAggregate | null;
}

/** The steps a step-wide answer covers. */
export interface StepFactsAnswer {
  /** Steps read (damaged ones included), ascending. */
  steps: StepFacts[];
  /** Steps still being written and damaged steps, ascending, one line each. */
  warnings: string[];
  /** Present on a partial answer only: the train steps not read yet. */
  coverage?: StepCoverage;
}

/** What the keeper reads of the run. */
export interface StepFactsSource {
  /** The run's visible train steps, ascending. */
  trainSteps(): Promise<number[]>;
  /** Changes whenever the step's files do. */
  stamp(step: number): Promise<string>;
  tables(step: number, priority: StepPriority): Promise<{ summary: RolloutTable; groups: RolloutTable }>;
  /** Bytes a cold read of the step decodes, counted until `atMost` is passed; absent when the format cannot tell. */
  bytes?(step: number, atMost: number): Promise<number>;
}

/** Steps not read yet whose dumps total less than this are read at once: the answer is complete a moment later. */
export const PARTIAL_STEPS_FROM_BYTES = 32 * 2 ** 20;
/** …and at most this many of them (each step's read has costs of its own beside its bytes). */
export const AT_ONCE_STEPS = 16;

type Outcome =
  | { kind: 'read'; facts: StepFacts; stamp: string }
  | { kind: 'damaged'; facts: StepFacts; stamp: string; line: string }
  | { kind: 'writing'; line: string; at: number };

/** A step found still being written is read again after this long (it is written, or damaged, by then). */
const WRITING_RETRY_MS = 5000;
/** Stamps of the steps read are checked again after this long (two stats a step). */
const RECHECK_MS = 10_000;

/**
 * Whether `steps` are at most AT_ONCE_STEPS and their dumps (`bytesOf`, told how many bytes are still under the
 * limit) total less than `limit` bytes (0: never): steps a moment's decode reads before answering.
 */
export async function fewAndSmall<S>(steps: readonly S[], limit: number, bytesOf: (step: S, left: number) => Promise<number>): Promise<boolean> {
  if (!(limit > 0) || steps.length > AT_ONCE_STEPS) return false;
  let total = 0;
  for (const step of steps) {
    total += await bytesOf(step, limit - total);
    if (total >= limit) return false;
  }
  return true;
}

/** Steps not read yet as runs of neighbouring train steps, `[first, last]`. */
export function unreadRuns(steps: readonly number[], unread: ReadonlySet<number>): [number, number][] {
  const out: [number, number][] = [];
  let open: [number, number] | null = null;
  for (const s of steps) {
    if (!unread.has(s)) {
      open = null;
      continue;
    }
    if (open) open[1] = s;
    else out.push((open = [s, s]));
  }
  return out;
}

const DUMP_SIGNALS = ['zero_std', 'lp_drift', 'imp_ratio', 'truncation', 'mixed_version', 'staleness'] as const;

/** Whether kept facts read back have the shape the answers take (an entry written by something else is read again). */
function wellFormed(facts: unknown, step: number): facts is StepFacts {
  if (typeof facts !== 'object' || facts === null) return false;
  const f = facts as Partial<StepFacts>;
  const cells = f.health?.cells as Record<string, { detail?: unknown; value?: unknown } | undefined> | undefined;
  const cellsOk = typeof cells === 'object' && cells !== null && DUMP_SIGNALS.every((id) => typeof cells[id]?.detail === 'string' && (cells[id]!.value === null || typeof cells[id]!.value === 'number'));
  const aggregateOk = f.aggregate === null || (typeof f.aggregate === 'object' && f.aggregate !== undefined && f.aggregate.rollout_id === step);
  return f.step === step && f.health?.step === step && cellsOk && aggregateOk;
}

export class StepFactsKeeper {
  private readonly known = new Map<number, Outcome>();
  /** Read steps whose stamp was checked since the run last changed. */
  private readonly checked = new Set<number>();
  private loading: Promise<void> | null = null;
  private sweeping: Promise<void> | null = null;
  /** A background read's failure, given to the next answer (and forgotten: the answer after that tries again). */
  private failure: unknown = null;
  private closed = false;
  /** Unread steps this cheap (bytes of dumps, all together) are read before answering (0: never). */
  partialFromBytes = PARTIAL_STEPS_FROM_BYTES;
  /**
   * How long a step's checked stamp is trusted without `--follow` (whose ticks call `changed()`): a file replaced
   * or damaged under a static server is seen by the next answer after this, as the step's own answers see it.
   */
  recheckMs = RECHECK_MS;
  private checkedAt = performance.now();

  constructor(
    private readonly source: StepFactsSource,
    private readonly kept: DerivedEntry | null = null,
  ) {}

  /** Every train step's facts, reading now those not known (`priority`: a command reads as asked). */
  async complete(priority: StepPriority): Promise<StepFactsAnswer> {
    const steps = await this.current();
    // a step being written is looked at again by every complete answer
    for (const [step, o] of this.known) if (o.kind === 'writing') this.known.delete(step);
    // newest first: the step a page asks for is most often the newest, read once for every answer
    for (const step of [...steps].reverse()) if (!this.known.has(step)) await this.read(step, priority);
    return this.answer(steps);
  }

  /** One train step's facts (read now if not known); null when it is no visible train step, or is still being written. */
  async one(step: number, priority: StepPriority): Promise<StepFacts | null> {
    if (!(await this.current()).includes(step)) return null;
    if (!this.known.has(step)) await this.read(step, priority);
    const o = this.known.get(step);
    return o && o.kind !== 'writing' ? o.facts : null;
  }

  /**
   * At once over the steps known; the others are read in the background, and the answer says how many it
   * covers. Steps not read yet that are a moment's decode (a small run's) are read first instead.
   */
  async soFar(): Promise<StepFactsAnswer> {
    const steps = await this.current();
    if (this.failure !== null) {
      const failure = this.failure;
      this.failure = null;
      throw failure;
    }
    const unread = steps.filter((s) => !this.known.has(s)).reverse();
    // (while the background read runs, the unread steps are not weighed again at every ask)
    if (unread.length > 0 && this.sweeping === null && (await this.cheap(unread))) {
      for (const step of unread) if (!this.known.has(step)) await this.read(step, 'asked');
    } else if (unread.length > 0) this.sweep();
    return this.answer(steps);
  }

  /** Whether these steps are few and their dumps total less than `partialFromBytes`. */
  private cheap(steps: readonly number[]): Promise<boolean> {
    const bytes = this.source.bytes;
    return bytes ? fewAndSmall(steps, this.partialFromBytes, (step, left) => bytes(step, left)) : Promise.resolve(false);
  }

  /** Settles once the background read has nothing left to read (tests, benchmarks). */
  async settled(): Promise<void> {
    while (this.sweeping) await this.sweeping;
  }

  /** The run gained files (`--follow`): the stamps of the steps known are checked again. */
  changed(): void {
    this.checked.clear();
    this.checkedAt = performance.now();
  }

  close(): void {
    this.closed = true;
  }

  /** The visible train steps, with the kept facts loaded and every known step's stamp checked. */
  private async current(): Promise<number[]> {
    await (this.loading ??= this.load());
    const steps = await this.source.trainSteps();
    const visible = new Set(steps);
    const now = performance.now();
    if (now - this.checkedAt > this.recheckMs) {
      this.checked.clear();
      this.checkedAt = now;
    }
    for (const [step, o] of this.known) if (o.kind === 'writing' && now - o.at > WRITING_RETRY_MS) this.known.delete(step);
    const unchecked = [...this.known].filter(([step, o]) => o.kind !== 'writing' && !this.checked.has(step) && visible.has(step));
    await Promise.all(
      unchecked.map(async ([step, o]) => {
        if ((await this.source.stamp(step)) === (o as { stamp: string }).stamp) this.checked.add(step);
        else if (this.known.get(step) === o) this.known.delete(step);
      }),
    );
    return steps;
  }

  private answer(steps: readonly number[]): StepFactsAnswer {
    const out: StepFactsAnswer = { steps: [], warnings: [] };
    const unread = new Set<number>();
    for (const step of steps) {
      const o = this.known.get(step);
      if (!o) unread.add(step);
      else if (o.kind === 'writing') out.warnings.push(o.line);
      else {
        out.steps.push(o.facts);
        if (o.kind === 'damaged') out.warnings.push(o.line);
      }
    }
    if (unread.size > 0) out.coverage = { steps_done: steps.length - unread.size, steps_total: steps.length, unread: unreadRuns(steps, unread) };
    return out;
  }

  /** Reads one step and keeps what it gives: its facts, its damage, or that it is still being written. */
  private async read(step: number, priority: StepPriority): Promise<void> {
    const stamp = await this.source.stamp(step);
    let outcome: Outcome;
    try {
      const t = await this.source.tables(step, priority);
      outcome = { kind: 'read', stamp, facts: { step, health: healthStepFacts({ step, summary: t.summary.rows, groups: t.groups.rows, stalenessFrom: t.summary.staleness_from }), aggregate: stepAggregate(t.summary, t.groups) } };
    } catch (e) {
      if (e instanceof DumpStillWriting) outcome = { kind: 'writing', line: `step ${step}: ${e.message}`, at: performance.now() };
      // a file the step's listing named and that is gone now (replaced, or removed under a live server): the
      // step is left out and looked at again, as one still being written; the board still answers
      else if (e instanceof NotFound) outcome = { kind: 'writing', line: `step ${step}: ${e.message}; looked for again`, at: performance.now() };
      else {
        const damage = damageOf(e);
        if (damage === null) throw e;
        outcome = { kind: 'damaged', stamp, line: `step ${step}: damaged: ${damage}`, facts: { step, health: healthStepFacts({ step, summary: null, groups: null, damaged: damage }), aggregate: null } };
      }
    }
    this.known.set(step, outcome);
    if (outcome.kind !== 'writing') this.checked.add(step);
    if (outcome.kind === 'read') this.kept?.write(() => this.serialized());
  }

  /** Reads the steps not known yet, newest first, one at a time; stops when every visible step is known. */
  private sweep(): void {
    if (this.sweeping) return;
    this.sweeping = (async () => {
      while (!this.closed) {
        const steps = await this.source.trainSteps();
        const next = steps.findLast((s) => !this.known.has(s));
        if (next === undefined) return;
        await this.read(next, 'background');
      }
    })()
      .catch((e) => {
        this.failure = e;
      })
      .finally(() => {
        this.sweeping = null;
      });
  }

  private serialized(): string {
    const steps: [number, string, StepFacts][] = [];
    for (const [step, o] of this.known) if (o.kind === 'read') steps.push([step, o.stamp, o.facts]);
    return JSON.stringify({ version: FACTS_VERSION, steps });
  }

  /** The facts kept by an earlier server (their stamps are checked before use); an unreadable entry is none. */
  private async load(): Promise<void> {
    const text = await this.kept?.read().catch(() => null);
    if (!text) return;
    let doc: { version?: unknown; steps?: unknown };
    try {
      doc = JSON.parse(text);
    } catch {
      return;
    }
    if (doc.version !== FACTS_VERSION || !Array.isArray(doc.steps)) return;
    for (const entry of doc.steps as unknown[]) {
      if (!Array.isArray(entry) || entry.length !== 3) continue;
      const [step, stamp, facts] = entry as [unknown, unknown, StepFacts];
      if (typeof step !== 'number' || typeof stamp !== 'string' || !wellFormed(facts, step)) continue;
      if (!this.known.has(step)) this.known.set(step, { kind: 'read', stamp, facts });
    }
  }
}
