// A run model whose background step reads (those a whole-run answer makes) wait until the test lets each one go,
// so a test sees the step-wide answers at each stage of the background read; every step read is counted.
import type { RunModel, StepPriority } from '../../src/run/model.ts';

export interface HeldSteps {
  model: RunModel;
  /** Every step read, in order, with its priority. */
  reads: { step: number; priority: StepPriority | undefined }[];
  /** Lets the waiting background read go (waiting for one if none waits yet) and waits until the next one begins, or a while. */
  letOneGo(): Promise<void>;
  /** Lets every read go, now and from now on. */
  release(): void;
}

export function heldSteps(model: RunModel): HeldSteps {
  const waiting: (() => void)[] = [];
  const reads: HeldSteps['reads'] = [];
  let held = true;
  const wrapped = Object.create(model) as RunModel;
  wrapped.step = async (id, evaluation, priority, signal) => {
    reads.push({ step: id, priority });
    if (held && priority === 'background') await new Promise<void>((r) => waiting.push(r));
    return model.step(id, evaluation, priority, signal);
  };
  const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 5));
  return {
    model: wrapped,
    reads,
    async letOneGo() {
      while (waiting.length === 0) await pause();
      const before = reads.length;
      waiting.shift()!();
      const until = Date.now() + 10_000;
      while (reads.length === before && Date.now() < until) await pause();
    },
    release() {
      held = false;
      for (const w of waiting.splice(0)) w();
    },
  };
}
