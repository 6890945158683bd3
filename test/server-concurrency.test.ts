// Many parallel requests right after start (every cache cold) and warm: never a 5xx.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startServer, type RunningServer } from '../src/server/listen.ts';
import { openRun } from '../src/server/run.ts';
import { everyEndpoint } from './support/endpoints.ts';
import { copyFixtureRun, type RunCopy } from './support/fixtures.ts';

/** Extra mirror-only steps (more than the mirror cache holds), each a copy of step 1's token mirror. */
const EXTRA_STEPS = [3, 4, 5, 6, 7, 8];

async function statuses(base: string, paths: string[]): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  await Promise.all(
    paths.map(async (p) => {
      const res = await fetch(new URL(p, base));
      await res.arrayBuffer();
      const list = out.get(res.status) ?? [];
      list.push(p);
      out.set(res.status, list);
    }),
  );
  return out;
}

function fivexx(m: Map<number, string[]>): string[] {
  return [...m].filter(([s]) => s >= 500).flatMap(([s, ps]) => ps.map((p) => `${s} ${p}`));
}

describe('concurrent requests', () => {
  let run: RunCopy;
  before(() => {
    run = copyFixtureRun();
    for (const id of EXTRA_STEPS) {
      copyFileSync(join(run.dir, 'dashboard_columns', 'rollout_1.parquet'), join(run.dir, 'dashboard_columns', `rollout_${id}.parquet`));
    }
  });
  after(() => run.dispose());

  async function serve(): Promise<RunningServer> {
    return startServer(await openRun(run.dir), { port: 0 });
  }

  test('30 parallel token reads from a cold start, then 300 over more steps than the mirror cache holds: no 5xx', async () => {
    const server = await serve();
    try {
      const cold = await statuses(server.url, Array.from({ length: 30 }, (_, i) => `/api/rollout/${i % 3}/sample/${(i % 3) * 32 + (i % 5)}/tokens`));
      assert.deepEqual(fivexx(cold), []);
      assert.equal(cold.get(200)?.length, 30);
      const warm = Array.from({ length: 300 }, (_, i) => {
        const id = [1, ...EXTRA_STEPS][i % (EXTRA_STEPS.length + 1)];
        return `/api/rollout/${id}/sample/${32 + (i % 7)}/tokens?start=${i % 4}`;
      });
      const answers = await statuses(server.url, warm);
      assert.deepEqual(fivexx(answers), []);
      assert.equal(answers.get(200)?.length, 300);
    } finally {
      await server.close();
    }
  });

  test('every endpoint family hammered in parallel from a cold start: no 5xx', async () => {
    const server = await serve();
    try {
      const paths = everyEndpoint();
      const burst = Array.from({ length: 6 }, () => paths).flat();
      const answers = await statuses(server.url, burst);
      assert.deepEqual(fivexx(answers), []);
      // Every request is one the run answers (the fixture is whole): only 200s.
      assert.deepEqual([...answers.keys()], [200], JSON.stringify([...answers].filter(([s]) => s !== 200)));
    } finally {
      await server.close();
    }
  });
});
