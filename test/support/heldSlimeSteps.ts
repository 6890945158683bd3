// A collected run whose samples carry slime's request traces (the slime-trace fixture's samples, one step file
// each), and a hold on the background read of a slime or collected run's steps: each step it reads waits until the
// test lets it go, so a test sees the whole-run answers at each stage; every step decoded is counted.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sampleStepFile, SAMPLES_DIR, type SampleFields } from '../../src/formats/collectedSamples.ts';
import { encodeSampleStep } from '../../src/formats/collectedSamplesWrite.ts';
import type { PyJson } from '../../src/formats/pythonJson.ts';
import type { SlimeAnswers } from '../../src/queries/slimeAnswers.ts';
import type { SlimeRunModel } from '../../src/run/slime/index.ts';
import { ageTree, readFixtureJson } from './fixtures.ts';

/** The fixture's decoded samples as a collector records them: tensors left out, ids and trace times moved to the step. */
function stepSamples(fixture: string, step: number): SampleFields[] {
  const { samples } = readFixtureJson('slime-trace', 'decoded', fixture) as { samples: Record<string, PyJson>[] };
  return samples.map((s, i) => {
    const fields: SampleFields = {};
    for (const [k, v] of Object.entries(s)) if (!(v !== null && typeof v === 'object' && !Array.isArray(v) && '__tensor__' in v)) fields[k] = v;
    if (!fixture.startsWith('eval')) fields.index = step * 100 + i;
    const trace = s.trace as { events: { ts: number }[] } | null;
    if (trace) fields.trace = { ...trace, events: trace.events.map((e) => ({ ...e, ts: e.ts + step * 100 })) } as unknown as PyJson;
    return fields;
  });
}

/** Writes a finished collected run at `dir`: train steps from the fixture's rollouts 0 and 1 in turn, eval steps from its eval rollout. */
export function writeTracedCollectedRun(dir: string, train: readonly number[], evals: readonly number[]): void {
  mkdirSync(join(dir, SAMPLES_DIR), { recursive: true });
  mkdirSync(join(dir, 'dashboard'), { recursive: true });
  for (const step of train) writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(step, false)), encodeSampleStep(stepSamples(`${step % 2}.json`, step)));
  for (const step of evals) writeFileSync(join(dir, SAMPLES_DIR, sampleStepFile(step, true)), encodeSampleStep(stepSamples('eval_0.json', step)));
  ageTree(dir);
}

export interface HeldSlimeSteps {
  /** Every step decoded (`train:ID`, `eval:ID`), in order, whoever asked. */
  decoded: string[];
  /** Lets the background read one step, and waits until it asks for its next turn or is done. */
  letOneGo(): Promise<void>;
  /** Lets every turn go, now and from now on. */
  release(): void;
}

export function heldSlimeSteps(answers: SlimeAnswers, model: SlimeRunModel): HeldSlimeSteps {
  const waiting: (() => void)[] = [];
  let holding = true;
  const decoded: string[] = [];
  const readable = model.readableDump.bind(model);
  model.readableDump = (id, evaluation) => {
    decoded.push(`${evaluation ? 'eval' : 'train'}:${id}`);
    return readable(id, evaluation);
  };
  model.backgroundTurn = () => (holding ? new Promise<void>((r) => waiting.push(r)) : Promise.resolve());
  const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 5));
  return {
    decoded,
    async letOneGo() {
      while (waiting.length === 0) await pause();
      waiting.shift()!();
      let settled = false;
      void answers.stepsSettled().then(() => (settled = true));
      while (waiting.length === 0 && !settled) await pause();
    },
    release() {
      holding = false;
      for (const w of waiting.splice(0)) w();
    },
  };
}
