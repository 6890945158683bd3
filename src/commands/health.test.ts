import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boardText } from './health.ts';
import type { HealthAnswer } from '../wire/index.ts';

test("the board as text marks a warning and a fired signal as the app does ('!' warn, '▲' fired)", () => {
  const cell = (value: number | null, level: 'ok' | 'warn' | 'fire' | 'none') => ({ value, level, detail: null, evidence: null });
  const answer = {
    signals: [{ id: 'zero_std' }, { id: 'lp_drift' }],
    rows: [
      { step: 3, cells: { zero_std: cell(0.4, 'warn'), lp_drift: cell(0.9, 'fire') } },
      { step: 4, cells: { zero_std: cell(0.1, 'ok'), lp_drift: cell(null, 'none') } },
    ],
    fired: [],
  } as unknown as HealthAnswer;
  const lines = boardText(answer).trimEnd().split('\n');
  assert.deepEqual(lines.map((l) => l.trim().split(/\s+/)), [
    ['step', 'zero_std', 'lp_drift'],
    ['3', '0.400!', '0.900▲'],
    ['4', '0.100·', '-'],
  ]);
});
