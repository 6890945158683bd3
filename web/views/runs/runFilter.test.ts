import { test } from 'node:test';
import assert from 'node:assert/strict';
import { filterWords, runMatches, type FilterColumn } from './runFilter.ts';
import type { RunListing } from '../../../src/wire/index.ts';

const run = (id: string, config: RunListing['config']): RunListing => ({
  id,
  name: id,
  start_ts: null,
  gpus: 8,
  steps: 200,
  formats: ['miles'],
  primary: true,
  end_ts: null,
  status: 'finished',
  warnings: [],
  config,
  latest: {},
});
// the table's own columns: the model and the group size under their labels, lr shown as the table writes it
const columns: FilterColumn[] = [
  { id: 'model', label: 'model', value: (r) => (r.config.hf_checkpoint as string) ?? null, text: (r) => String(r.config.hf_checkpoint ?? '—') },
  { id: 'lr', label: 'lr', value: (r) => (r.config.lr as number) ?? null, text: (r) => (typeof r.config.lr === 'number' ? r.config.lr.toExponential(2) : '—') },
  { id: 'group', label: 'group size', value: (r) => (r.config.n_samples_per_prompt as number) ?? null, text: (r) => String(r.config.n_samples_per_prompt ?? '—') },
];
const healthy = run('healthy', { hf_checkpoint: 'Qwen/Qwen3-8B', lr: 0.000001, n_samples_per_prompt: 8 });
const fast = run('fast', { hf_checkpoint: 'Qwen/Qwen3-0.6B', lr: 0.00003, n_samples_per_prompt: 16 });
const shown = (needle: string) => [healthy, fast].filter((r) => runMatches(r, filterWords(needle, columns), columns)).map((r) => r.id);

test('the runs filter finds a run by the names and values its table shows, numbers however written', () => {
  assert.deepEqual(shown('model=qwen/qwen3-8b'), ['healthy'], 'a column by its label');
  assert.deepEqual(shown('hf_checkpoint=Qwen/Qwen3-8B'), ['healthy'], 'an arg by its name');
  assert.deepEqual(shown('lr=1e-6'), ['healthy']);
  assert.deepEqual(shown('lr=1.00e-6'), ['healthy'], 'as the table shows it');
  assert.deepEqual(shown('lr=0.000001'), ['healthy'], 'as recorded');
  assert.deepEqual(shown('lr=3e-5'), ['fast']);
  assert.deepEqual(shown('group size=8'), ['healthy'], 'a label of two words');
  assert.deepEqual(shown('group=16 fast'), ['fast']);
  assert.deepEqual(shown('lr=2e-6'), []);
  assert.deepEqual(shown('qwen'), ['healthy', 'fast'], 'any word, anywhere');
  assert.deepEqual(shown('finished miles'), ['healthy', 'fast']);
});

test('the runs filter finds a run by its folder', () => {
  const a = { ...run('teamA-healthy', {}), folder: 'teamA/healthy' };
  const b = { ...run('teamB-healthy', {}), folder: 'teamB/healthy' };
  assert.deepEqual([a, b].filter((r) => runMatches(r, filterWords('teama/', columns), columns)).map((r) => r.id), ['teamA-healthy']);
});
