import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pickTexts, scoreTexts } from './scores.ts';

test('different scores never read alike, and only equal scores are called ties', () => {
  // a 1,024-GPU run's "late start" pick: eight different lags a tenth of a second apart at most
  const late = [0.181, 0.18, 0.178, 0.177, 0.167, 0.166, 0.165, 0.164];
  const shown = pickTexts(late, 's');
  assert.deepEqual(shown, ['0.181 s', '0.180 s', '0.178 s', '0.177 s', '0.167 s', '0.166 s', '0.165 s', '0.164 s']);
  assert.ok(shown.every((t) => !t.includes('tie')));
  // "lowest util": 55.494 % against 55.536 % reads apart at two decimals
  assert.deepEqual(pickTexts([55.494, 55.536, 61.2], '%'), ['55.49 %', '55.54 %', '61.20 %']);
  // equal scores are ties, whatever the digits
  assert.deepEqual(pickTexts([12.5, 12.5, 9.25], '%'), ['12.5 % (tie)', '12.5 % (tie)', '9.3 %']);
  assert.deepEqual(pickTexts([3, 3, 1], 's'), ['3.0 s (tie)', '3.0 s (tie)', '1.0 s']);
  // scores one decimal tells apart keep one decimal
  assert.deepEqual(scoreTexts([13.8, 2.1, 0.4], 's'), ['13.8 s', '2.1 s', '0.4 s']);
  // at most six decimals, however close
  assert.deepEqual(scoreTexts([1, 1 + 1e-9], 's'), ['1.000000 s', '1.000000 s']);
});
