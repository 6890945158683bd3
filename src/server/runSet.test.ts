// Run ids under `--runs ROOT`: a function of the folders found, not of the order they were found in.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { distinctTails, folderBelow, rootRunIds } from './runSet.ts';

const root = join('/', 'srv', 'runs');
const at = (...parts: string[]) => join(root, ...parts);
const ids = (found: string[], fresh = found, taken: string[] = []) => Object.fromEntries([...rootRunIds(root, found, fresh, new Set(taken))].map(([d, id]) => [folderBelow(root, d), id]));

test('a folder name no other run folder under the root has is the id; shared names become the path below the root', () => {
  assert.deepEqual(ids([at('teamA', 'healthy'), at('teamA', 'miles-run'), at('teamB', 'healthy'), at('tb-only')]), {
    'teamA/healthy': 'teamA-healthy',
    'teamA/miles-run': 'miles-run',
    'teamB/healthy': 'teamB-healthy',
    'tb-only': 'tb-only',
  });
  // generic names (…/exp1/dump_details, slime's …/out) tell their runs apart by the folders above them
  assert.deepEqual(ids([at('a', 'run'), at('b', 'run')]), { 'a/run': 'a-run', 'b/run': 'b-run' });
});

test('the ids do not depend on the order the folders are found in', () => {
  const found = [at('team0', 'healthy'), at('teamA', 'healthy'), at('teamB', 'healthy'), at('solo')];
  assert.deepEqual(ids([...found].reverse()), ids(found));
  assert.deepEqual(ids(found), { 'team0/healthy': 'team0-healthy', 'teamA/healthy': 'teamA-healthy', 'teamB/healthy': 'teamB-healthy', solo: 'solo' });
});

test('a folder that joins later never takes an id a served run has', () => {
  // `healthy` was alone when served; a second `healthy` joins under --follow: the first keeps its id, the new one is told by its path
  const served = at('teamA', 'healthy');
  const late = at('teamB', 'healthy');
  assert.deepEqual(ids([served, late], [late], ['healthy']), { 'teamB/healthy': 'teamB-healthy' });
  // a run named on the command line holds a folder's name: that folder is told by its path
  assert.deepEqual(ids([at('x', 'solo')], [at('x', 'solo')], ['solo']), { 'x/solo': 'x-solo' });
});

test('paths that read alike once made URL-safe get a short hash of the path each, the same on every start', () => {
  const found = [at('a b', 'run'), at('a-b', 'run'), at('c', 'run')];
  const got = ids(found);
  assert.match(got['a b/run']!, /^a-b-run-[0-9a-f]{6}$/);
  assert.match(got['a-b/run']!, /^a-b-run-[0-9a-f]{6}$/);
  assert.notEqual(got['a b/run'], got['a-b/run']);
  assert.equal(got['c/run'], 'c-run');
  assert.deepEqual(ids([...found].reverse()), got);
  // a path id a unique folder name already is
  const clash = ids([at('x', 'healthy'), at('y', 'healthy'), at('x-healthy')]);
  assert.equal(clash['x-healthy'], 'x-healthy');
  assert.match(clash['x/healthy']!, /^x-healthy-[0-9a-f]{6}$/);
});

test('the root itself as a run is named after its folder', () => {
  assert.deepEqual(ids([root]), { runs: 'runs' });
  assert.equal(folderBelow(root, root), 'runs');
});

test('a run named on the command line is shown by its folder name, with the folders above it that tell it from the others', () => {
  assert.deepEqual(distinctTails([join('/', 'home', 'u', 'a', 'x', 'run'), join('/', 'opt', 'b', 'x', 'run'), join('/', 'opt', 'c', 'other')]), ['a/x/run', 'b/x/run', 'other']);
  assert.deepEqual(distinctTails([join('/', 'home', 'u', 'runs', 'healthy'), join('/', 'home', 'u', 'runs', 'collapse')]), ['healthy', 'collapse']);
  assert.deepEqual(distinctTails([join('/', 'srv', 'run')]), ['run']);
});
