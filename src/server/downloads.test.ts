import assert from 'node:assert/strict';
import { test } from 'node:test';
import { safeNamePart, utcNamePart, withRunId } from './downloads.ts';

test('a file name part keeps letters, digits, dot, underscore and dash, never hides the file, and is never a Windows device name', () => {
  assert.equal(safeNamePart('healthy-2'), 'healthy-2');
  assert.equal(safeNamePart('_x'), '_x', 'a run id as it is');
  assert.equal(safeNamePart('teamA/healthy run'), 'teamA_healthy_run');
  assert.equal(safeNamePart('..'), 'run');
  assert.equal(safeNamePart('.hidden'), 'hidden');
  assert.equal(safeNamePart('-rf'), 'rf');
  assert.equal(safeNamePart('con'), '_con');
  assert.equal(safeNamePart('NUL.txt'), '_NUL.txt');
  assert.equal(safeNamePart('console'), 'console');
  assert.equal(safeNamePart('é'.repeat(3)), 'run');
  assert.equal(safeNamePart('x'.repeat(200)).length, 80);
});

test('a time as a name part is UTC to the second; one no date holds is its seconds', () => {
  assert.equal(utcNamePart(1_796_686_447.9), '20261207T233407Z');
  assert.equal(utcNamePart(0), '19700101T000000Z');
  assert.equal(utcNamePart(1e15), '1000000000000000');
});

test('the run id joins the server env without changing what it held', () => {
  const env = { incoming: 1, outgoing: 2 };
  assert.deepEqual(withRunId(env, 'healthy'), { incoming: 1, outgoing: 2, rlsightRunId: 'healthy' });
  assert.deepEqual(env, { incoming: 1, outgoing: 2 });
  assert.deepEqual(withRunId(undefined, 'r'), { rlsightRunId: 'r' });
});
