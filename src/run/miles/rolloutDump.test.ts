// A forged rollout dump (one sample record listed many times by memo reference) is refused before it is summarised.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readdirSync } from 'node:fs';
import { openTorchFile } from '../../formats/torch/load.ts';
import { unpickle } from '../../formats/torch/unpickle.ts';
import { fixturePath } from '../../../test/support/fixtures.ts';
import { DumpInconsistent } from '../errors.ts';
import { decodeRolloutDump, PER_TOKEN_LISTS } from './rolloutDump.ts';

const str = (s: string): number[] => [0x8c, s.length, ...new TextEncoder().encode(s)];

/** `{"rollout_id": 0, "samples": [d] + [d] * (copies - 1)}` where every later d is a memo GET of the first. */
function forged(copies: number): Uint8Array {
  const body = [0x7d, ...str('rollout_id'), 0x4b, 0, 0x73, ...str('samples'), 0x5d, 0x7d, 0x71, 0, 0x61];
  for (let i = 1; i < copies; i++) body.push(0x68, 0, 0x61);
  return Uint8Array.from([0x80, 2, ...body, 0x73, 0x2e]);
}

describe('decodeRolloutDump limits', () => {
  it('refuses one sample record listed at several positions', () => {
    const value = unpickle(forged(200_000), { file: 'rollout_data/0.pt' }).value;
    assert.throws(
      () => decodeRolloutDump(value, { rolloutId: 0, evaluation: false, file: 'rollout_data/0.pt' }),
      (e: unknown) => e instanceof DumpInconsistent && /^rollout_data\/0\.pt: sample at position 1 is the same record as position 0$/.test(e.message),
    );
  });

  it('still decodes distinct samples', () => {
    const value = { rollout_id: 0, samples: [{ index: 0 }, { index: 1 }] };
    assert.deepEqual(decodeRolloutDump(value, { rolloutId: 0, evaluation: false, file: 'f' }).samples.map((s) => s.index), [0, 1]);
  });
});

describe('a rollout dump decoded for its records alone', () => {
  it('gives the records of the fixture dumps the full decode gives, its per-token lists kept as lengths', async () => {
    for (const name of readdirSync(fixturePath('miles-demo', 'run', 'rollout_data'))) {
      const path = fixturePath('miles-demo', 'run', 'rollout_data', name);
      const expect = { rolloutId: Number(name.replace(/^eval_|\.pt$/g, '')), evaluation: name.startsWith('eval_'), file: name };
      const full = decodeRolloutDump((await openTorchFile(path, { typedLists: true })).value, expect);
      const skim = decodeRolloutDump((await openTorchFile(path, { typedLists: true, lengthOnlyUnder: PER_TOKEN_LISTS })).value, expect);
      assert.ok(full.samples.length > 0 && full.samples.some((s) => s.totalLength > 0), name);
      assert.deepEqual(skim, full, name);
    }
  });
});
