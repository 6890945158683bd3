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

test('without follow ticks, a step whose files changed is read again once its stamp is due for a check', async () => {
  let stamp = 'a';
  let reward = 1;
  const source: StepFactsSource = {
    trainSteps: async () => [0],
    stamp: async () => stamp,
    tables: async () => ({ summary: { columns: ['sample_index', 'raw_reward'], rows: [{ sample_index: 0, raw_reward: reward }], rollout_id: 0 } as never, groups: table(['group_index'], [{ group_index: 0 }]) }),
  };
  const keeper = new StepFactsKeeper(source);
  const mean = async () => (await keeper.complete('asked')).steps[0].aggregate?.reward_mean;
  assert.equal(await mean(), 1);
  // the dump is replaced under a server without --follow
  stamp = 'b';
  reward = 0;
  assert.equal(await mean(), 1, 'a checked stamp is trusted for a while');
  keeper.recheckMs = 0;
  await new Promise((r) => setTimeout(r, 2));
  assert.equal(await mean(), 0, 'then checked again, and the step read again');
});
