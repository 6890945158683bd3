// Many parallel requests right after start (every cache cold) and warm: never a 5xx; the reference's
// requests replayed by 16 clients at once get exactly the bytes one client gets alone.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startServer, type RunningServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { everyEndpoint } from './support/endpoints.ts';
import { copyFixtureRun, readFixtureJson, type RunCopy } from './support/fixtures.ts';

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

/** Every distinct request the reference answered (the golden index), bad ones included. */
const goldenRequests = [...new Set(readFixtureJson<{ entries: { request: string }[] }>('miles-demo', 'golden', 'index.json').entries.map((e) => e.request))];

/** Status, type and body of one GET; a client that takes gzip has its body gunzipped, one that does not must get it plain. */
function answer(base: string, path: string, gzip: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { headers: { 'accept-encoding': gzip ? 'gzip' : 'identity' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const encoding = res.headers['content-encoding'];
        if (encoding !== undefined && !(gzip && encoding === 'gzip')) reject(new Error(`${path}: ${encoding} to a client taking ${gzip ? 'gzip' : 'identity'}`));
        const body = encoding === 'gzip' ? gunzipSync(raw) : raw;
        resolve(`${res.statusCode} ${res.headers['content-type']}\n${body.toString('base64')}`);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** `xs` in an order of its own for client `k` (a fixed permutation, so a failure can be replayed). */
function orderFor<T>(xs: readonly T[], k: number): T[] {
  const out = [...xs];
  let s = k + 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
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

  test('the reference requests replayed by 16 clients at once, each in its own order, answer byte for byte as to one client alone', async () => {
    const alone = new Map<string, string>();
    let server = await serve();
    try {
      for (const path of goldenRequests) alone.set(path, await answer(server.url, path, false));
    } finally {
      await server.close();
    }
    server = await serve(); // cold again: the 16 clients ask while everything is computed for the first time
    try {
      const differing: string[] = [];
      await Promise.all(
        Array.from({ length: 16 }, async (_, k) => {
          for (const path of orderFor(goldenRequests, k)) {
            if ((await answer(server.url, path, k % 2 === 0)) !== alone.get(path)) differing.push(`client ${k}: ${path}`);
          }
        }),
      );
      assert.deepEqual(differing, []);
    } finally {
      await server.close();
    }
  });

  test('an idle kept-alive connection is still open after 8 s: a client asking again on it is not reset', async () => {
    const server = await serve();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const ask = () =>
      new Promise<boolean>((resolve, reject) => {
        const req = request(new URL('/api/meta', server.url), { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(req.reusedSocket));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      assert.equal(await ask(), false);
      await new Promise((r) => setTimeout(r, 8000));
      assert.equal(await ask(), true, 'the second request went over the first connection');
    } finally {
      agent.destroy();
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
