import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyFixtureRun, loadGoldens } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import type { LaneEntry } from '../run/telemetry/records.ts';
import { BadArgument } from './limits.ts';
import { laneGrammar, resolveLanes } from './lanes.ts';

const lane = (node: string, gpu: number, index: number, ranks: number[], engine_addrs: string[], roles: string[]): LaneEntry => ({ node, gpu, index, ranks, engine_addrs, roles });

// Four GPUs of one node, engines A (gpus 0,1) and B (gpus 2,3, restarted 15004 -> 15006), like the demo run.
const LANES: LaneEntry[] = [
  lane('10.0.0.1', 0, 0, [0], ['http://10.0.0.1:15000'], ['rollout', 'train']),
  lane('10.0.0.1', 1, 1, [1], ['http://10.0.0.1:15000'], ['rollout', 'train']),
  lane('10.0.0.1', 2, 2, [2], ['http://10.0.0.1:15004', 'http://10.0.0.1:15006'], ['rollout', 'train']),
  lane('10.0.0.1', 3, 3, [3], ['http://10.0.0.1:15004', 'http://10.0.0.1:15006'], ['rollout']),
];

const gpus = (text: string): number[] | null => {
  const sel = resolveLanes(text, LANES);
  return sel === null ? null : [...sel].map((k) => Number(k.split(':').at(-1))).sort();
};

describe('resolveLanes', () => {
  test('all, blank and null select every lane', () => {
    assert.equal(resolveLanes(null, LANES), null);
    assert.equal(resolveLanes('', LANES), null);
    assert.equal(resolveLanes('  all ', LANES), null);
  });

  test('every selector kind, as a union of terms', () => {
    assert.deepEqual(gpus('rank:0-2'), [0, 1, 2]);
    assert.deepEqual(gpus('rank:1-'), [1], 'the reference reads an open range as its start');
    assert.deepEqual(gpus('rank:5-2'), [], 'and a backwards range as nothing');
    assert.deepEqual(gpus('rank: 1'), [1]);
    assert.deepEqual(gpus('g:1-3'), [1, 2, 3]);
    assert.deepEqual(gpus('g:0,g:3'), [0, 3]);
    assert.deepEqual(gpus('rank:0, engine:15000'), [0, 1]);
    assert.deepEqual(gpus('engine:15006'), [2, 3]);
    assert.deepEqual(gpus('every:2'), [0, 2]);
    assert.deepEqual(gpus('role:train'), [0, 1, 2]);
    assert.deepEqual(gpus('node:10.0.0.1'), [0, 1, 2, 3]);
    assert.deepEqual(gpus('node: 10.0.0.1'), [], 'node values are not trimmed');
    assert.deepEqual(gpus(' , rank:0 ,'), [0]);
    assert.deepEqual([...resolveLanes('gpu:10.9.9.9:0', LANES)!], ['10.9.9.9:0'], 'gpu: names a lane even if unknown');
    assert.deepEqual([...resolveLanes('gpu:fe80::1:07', LANES)!], ['fe80::1:7'], 'gpu: splits at the last colon');
  });

  test('strictly (rlsight/lanes), open and backwards ranges are refused', () => {
    assert.throws(() => laneGrammar('g:5-', true), /bad lane selector 'g:5-': the range has no end \(write 5 or 5-<last>\)/);
    assert.throws(() => laneGrammar('rank:5-2', true), /bad lane selector 'rank:5-2': the range runs backwards \(write 2-5\)/);
    assert.deepEqual(laneGrammar('g:3-3, g:4', true), [
      { kind: 'g', lo: 3, hi: 3 },
      { kind: 'g', lo: 4, hi: 4 },
    ]);
  });

  test('parses without a lane index', () => {
    assert.deepEqual(laneGrammar('rank:1-3,every:4'), [
      { kind: 'rank', lo: 1, hi: 3 },
      { kind: 'every', stride: 4 },
    ]);
  });

  const bad: [string, string][] = [
    ['bananas', "bad lane selector 'bananas': expected kind:value"],
    ['rank', "bad lane selector 'rank': expected kind:value"],
    ['rank:', "bad lane selector 'rank:': expected kind:value"],
    ['rank:0, all', "bad lane selector 'all': expected kind:value"],
    ['role:banana', "bad lane selector 'role:banana': role must be train or rollout"],
    ['gpu:3', "bad lane selector 'gpu:3': expected gpu:<node>:<index>"],
    ['g:x', "invalid literal for int() with base 10: 'x'"],
    ['rank:-1', "invalid literal for int() with base 10: ''"],
    ['gpu:10.0.0.1:x', "invalid literal for int() with base 10: 'x'"],
    ['every:0', "bad lane selector 'every:0': stride must be positive"],
    ['foo:1', "unknown lane selector kind 'foo' in 'foo:1'"],
    [':1', "unknown lane selector kind '' in ':1'"],
  ];
  for (const [text, message] of bad) {
    test(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => resolveLanes(text, LANES),
        (err: unknown) => err instanceof BadArgument && err.param === 'lanes' && err.message === message,
      );
    });
  }
});

describe('lane grammar 400 goldens', () => {
  const run = copyFixtureRun();
  const store = TelemetryStore.open(join(run.dir, 'dashboard'));
  run.dispose();
  const goldens = loadGoldens().filter((g) => g.status === 400 && /lane grammar/.test(g.note ?? ''));

  test('has them', () => assert.ok(goldens.length >= 14));

  for (const g of goldens) {
    test(`${g.file} ${g.request}`, () => {
      const text = new URL(g.request, 'http://x').searchParams.get('lanes');
      assert.throws(
        () => resolveLanes(text, store.laneIndex()),
        (err: unknown) => err instanceof BadArgument && err.param === 'lanes' && err.message === g.body.detail,
      );
    });
  }
});
