import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runParamNote, runsParamNote, stepParamNote, windowParamNote } from './urlNotes.ts';

test('a step parameter that is no recorded step says so and lists the steps', () => {
  assert.equal(stepParamNote('a', '2', [1, 2, 3], 2), null);
  assert.equal(stepParamNote('a', null, [1, 2, 3], 3), null);
  assert.equal(stepParamNote('b', 'zz', [0, 1, 2, 3], 3), 'b=“zz” is not a step number (steps 0–3): showing step 3 instead.');
  assert.equal(stepParamNote('a', '99', [0, 1, 2], 1), 'a=99 is not a recorded step (steps 0–2): showing step 1 instead.');
});

test('a run parameter that names no served run says so and lists the runs', () => {
  assert.equal(runParamNote('run_b', 'collapse', ['healthy', 'collapse'], 'collapse'), null);
  assert.equal(runParamNote('run_b', null, ['healthy'], 'healthy'), null);
  assert.equal(runParamNote('run_b', 'zz', ['healthy', 'collapse'], 'healthy'), 'run_b=“zz” is not a run served here (runs: healthy, collapse): showing healthy instead.');
});

test('compared runs naming runs not served say which, and list the runs', () => {
  assert.equal(runsParamNote('healthy,collapse', ['healthy', 'collapse']), null);
  assert.equal(runsParamNote('all', ['healthy']), null);
  assert.equal(runsParamNote(null, ['healthy']), null);
  assert.equal(runsParamNote('healthy,zz', ['healthy', 'collapse']), 'runs=healthy,zz: “zz” is not a run served here (runs: healthy, collapse), left out of the comparison.');
});

test('a timeline window that cannot be shown as asked says why', () => {
  const shown = { t0: 100, t1: 200 };
  assert.equal(windowParamNote(null, null, 0, 1000, shown), null);
  assert.equal(windowParamNote('100', '200', 0, 1000, shown), null);
  assert.match(windowParamNote('abc', '200', 0, 1000, shown)!, /^t0=“abc” is not a number/);
  assert.match(windowParamNote('100', null, 0, 1000, shown)!, /^t0 needs t1 too/);
  assert.match(windowParamNote('5000', '6000', 0, 1000, { t0: 900, t1: 1000 })!, /outside the run's data/);
  assert.match(windowParamNote('900', '1100', 0, 1000, { t0: 800, t1: 1000 })!, /reaches past/);
});
