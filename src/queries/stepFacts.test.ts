// The step facts behind the Health board and the dump/* metrics: a step whose file is gone is left out and read
// again, never the whole board's failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NotFound } from '../run/errors.ts';
import { StepFactsKeeper, type StepFactsSource } from './stepFacts.ts';

const table = (columns: string[], rows: Record<string, unknown>[]) => ({ columns, rows }) as never;

test('a step whose file went missing after it was listed is left out with a warning and read again later', async () => {
  let gone = true;
  const reads: number[] = [];
  const source: StepFactsSource = {
    trainSteps: async () => [0, 1],
    stamp: async (step) => `s${step}`,
    tables: async (step) => {
      reads.push(step);
      if (step === 1 && gone) throw new NotFound('train_data/1_3.pt not found');
      return { summary: table(['sample_index', 'reward'], [{ sample_index: 0, reward: 1 }]), groups: table(['group_index'], [{ group_index: 0 }]) };
    },
  };
  const keeper = new StepFactsKeeper(source);
  const first = await keeper.complete('asked');
  assert.deepEqual(first.steps.map((s) => s.step), [0]);
  assert.deepEqual(first.warnings, ['step 1: train_data/1_3.pt not found; looked for again']);
  gone = false;
  const second = await keeper.complete('asked');
  assert.deepEqual(second.steps.map((s) => s.step).sort(), [0, 1]);
  assert.deepEqual(second.warnings, []);
  assert.deepEqual(reads, [1, 0, 1]);
});
