// Sample diffs on the real pipelines' fixtures (a miles dump, two slime debug rollout dumps): a group's best
// and worst, and samples of two different steps, each aligned by token id with every alignment invariant held.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { bestAndWorst, sampleDiff } from '../src/queries/stepDiff.ts';
import { openRun } from '../src/commands/openRun.ts';
import { assertAlignmentHolds } from './support/alignment.ts';
import { ageTree, copyFixtureRun, fixturePath, type RunCopy } from './support/fixtures.ts';

function slimeCopy(name: string): RunCopy {
  const base = mkdtempSync(join(tmpdir(), `rlsight-${name}-`));
  cpSync(fixturePath(name, 'rollout_data'), join(base, 'run', 'rollout_data'), { recursive: true });
  ageTree(join(base, 'run'));
  return { dir: join(base, 'run'), dispose: () => rmSync(base, { recursive: true, force: true }) };
}

const FIXTURES: [string, () => RunCopy][] = [
  ['miles-demo', () => copyFixtureRun('miles-demo')],
  ['slime-trace', () => slimeCopy('slime-trace')],
  ['slime-trace-legacy-pd', () => slimeCopy('slime-trace-legacy-pd')],
];

describe('sample diff on the fixtures', () => {
  for (const [name, copyOf] of FIXTURES) {
    test(`${name}: a group's best and worst, and two steps' samples, align by token id`, async () => {
      const copy = copyOf();
      const open = await openRun(copy.dir);
      try {
        const run = open;
        const { train } = await run.rolloutIds();
        assert.ok(train.length > 0, `${name} has train steps`);
        const step = train[0]!;
        const rows = (await run.summary(step, false)).rows;
        const counts = new Map<number, number>();
        for (const r of rows) counts.set(Number(r.group_index), (counts.get(Number(r.group_index)) ?? 0) + 1);
        const group = [...counts].find(([, n]) => n >= 2)?.[0];
        const pairs: [number, number, number, number][] = [];
        if (group !== undefined) {
          const [best, worst] = bestAndWorst(rows, group);
          pairs.push([step, best, step, worst]);
        }
        if (train.length > 1) {
          const next = (await run.summary(train[1]!, false)).rows;
          pairs.push([step, Number(rows[0]!.sample_index), train[1]!, Number(next[0]!.sample_index)]);
        }
        assert.ok(pairs.length > 0, `${name}: some pair to compare`);
        for (const [sa, ia, sb, ib] of pairs) {
          const d = await sampleDiff({ run, step: sa, sampleIndex: ia, evaluation: false }, { run, step: sb, sampleIndex: ib, evaluation: false });
          assertAlignmentHolds(d, await run.tokens(sa, ia, { start: 0, evaluation: false }), await run.tokens(sb, ib, { start: 0, evaluation: false }));
          assert.equal(d.first_divergence.token === null, d.alignment.deleted + d.alignment.inserted === 0, 'identical exactly when nothing is deleted or inserted');
        }
      } finally {
        await open.close();
        copy.dispose();
      }
    });
  }
});
