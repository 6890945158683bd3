// Files the server must never open or follow: FIFOs in the run, layout damage, symlinks out of the run.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync, renameSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startServer, type RunningServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { askEndpoint, everyEndpoint, HANG_MS } from './support/endpoints.ts';
import { copyFixtureRun } from './support/fixtures.ts';

const OLD = Date.now() / 1000 - 86_400;
/**
 * A request unanswered after this long counts as hung (a FIFO wedge never answers at all). Generous, since
 * the test machine may be shared by many jobs; bench/fuzz.ts measures the real latencies.
 */

function mkfifo(path: string): void {
  rmSync(path, { recursive: true, force: true });
  execFileSync('mkfifo', [path]);
  utimesSync(path, OLD, OLD);
}

/** Status of each request, each given at most `ms` (a hang is status 0). */
function ask(base: string, paths: string[], ms = HANG_MS): Promise<{ path: string; status: number; body: any }[]> {
  return Promise.all(paths.map((path) => askEndpoint(base, path, ms)));
}

async function withServer<T>(dir: string, fn: (s: RunningServer) => Promise<T>, cacheDir?: string): Promise<T> {
  const server = await startServer(await openRun(dir, { cacheDir }), { port: 0 });
  try {
    return await fn(server);
  } finally {
    await server.close();
  }
}

describe('non-regular files in the run', () => {
  test('FIFOs in place of dumps, the mirror and the sidecar never wedge the server', async () => {
    const run = copyFixtureRun();
    try {
      mkfifo(join(run.dir, 'rollout_data', '2.pt'));
      mkfifo(join(run.dir, 'train_data', '1_0.pt'));
      mkfifo(join(run.dir, 'dashboard_columns', 'rollout_0.parquet'));
      mkfifo(join(run.dir, 'trajectory', '1.jsonl'));
      mkfifo(join(run.dir, 'rollout_data', '7.pt'));
      await withServer(run.dir, async (s) => {
        const paths = ['/api/rollout/2/summary', '/api/rollout/1/summary', '/api/rollout/0/sample/0/tokens', '/api/rollout/1/sample/32/messages', '/api/rollout/7/summary'];
        const first = await ask(s.url, [...paths, ...paths]);
        assert.deepEqual(first.filter((a) => a.status === 0 || a.status >= 500).map((a) => a.path), []);
        const after = await ask(s.url, ['/api/meta', '/', ...everyEndpoint()]);
        assert.deepEqual(after.filter((a) => a.status === 0 || a.status >= 500).map((a) => `${a.status} ${a.path}`), []);
        assert.equal(after[0].status, 200);
      });
    } finally {
      run.dispose();
    }
  });

  test('a FIFO in place of a telemetry stream or partition is skipped with a warning', async () => {
    const run = copyFixtureRun();
    try {
      mkfifo(join(run.dir, 'dashboard', 'metrics.jsonl'));
      mkfifo(join(run.dir, 'dashboard', 'gpu_util', '19700112_13.jsonl'));
      mkfifo(join(run.dir, 'dashboard', 'meta.json'));
      await withServer(run.dir, async (s) => {
        const answers = await ask(s.url, everyEndpoint());
        assert.deepEqual(answers.filter((a) => a.status === 0 || a.status >= 500).map((a) => `${a.status} ${a.path}`), []);
        const [meta] = await ask(s.url, ['/api/meta']);
        const text = JSON.stringify(meta.body.warnings);
        for (const f of ['dashboard/metrics.jsonl', 'dashboard/gpu_util/19700112_13.jsonl', 'dashboard/meta.json']) assert.ok(text.includes(f), `${f} in ${text}`);
      });
    } finally {
      run.dispose();
    }
  });
});

test('a dump that is a directory or a FIFO is a 422 at once, however new: waiting would not make it a dump', async () => {
  const run = copyFixtureRun();
  try {
    // made just now (not aged): a new regular file that fails to decode would be "still being written" (503)
    rmSync(join(run.dir, 'rollout_data', 'eval_0.pt'));
    mkdirSync(join(run.dir, 'rollout_data', 'eval_0.pt'));
    rmSync(join(run.dir, 'rollout_data', '2.pt'));
    execFileSync('mkfifo', [join(run.dir, 'rollout_data', '2.pt')]);
    await withServer(run.dir, async (s) => {
      for (const [path, file] of [['/api/rollout/0/summary?eval=1', 'rollout_data/eval_0.pt'], ['/api/rollout/2/summary', 'rollout_data/2.pt']]) {
        const [a] = await ask(s.url, [path]);
        assert.equal(a.status, 422, `${path}: ${JSON.stringify(a.body)}`);
        assert.match(String(a.body.detail), new RegExp(`^${file.replace('.', '\\.')}: `));
      }
    });
  } finally {
    run.dispose();
  }
});

describe('layout damage: the server always starts and names each damaged file', () => {
  for (const [what, damage, named] of [
    ['metrics.jsonl as a directory', (d: string) => mkdirSync(join(d, 'dashboard', 'metrics.jsonl'), { recursive: true }), 'dashboard/metrics.jsonl'],
    ['topology.jsonl as a directory', (d: string) => mkdirSync(join(d, 'dashboard', 'topology.jsonl'), { recursive: true }), 'dashboard/topology.jsonl'],
    [
      'dashboard as a file',
      (d: string) => {
        rmSync(join(d, 'dashboard'), { recursive: true });
        writeFileSync(join(d, 'dashboard'), 'x');
      },
      'dashboard',
    ],
    [
      'train_data as a file',
      (d: string) => {
        rmSync(join(d, 'train_data'), { recursive: true });
        writeFileSync(join(d, 'train_data'), 'x');
      },
      'train_data',
    ],
  ] as const) {
    test(what, async () => {
      const run = copyFixtureRun();
      try {
        for (const f of ['metrics.jsonl', 'topology.jsonl']) {
          const p = join(run.dir, 'dashboard', f);
          if (what.startsWith(f)) rmSync(p);
        }
        damage(run.dir);
        await withServer(run.dir, async (s) => {
          const answers = await ask(s.url, everyEndpoint());
          assert.deepEqual(answers.filter((a) => a.status === 0 || a.status >= 500).map((a) => `${a.status} ${a.path}`), []);
          // Asked again once everything was read: the damage any answer met is listed.
          const [meta] = await ask(s.url, ['/api/meta']);
          assert.equal(meta.status, 200);
          assert.ok(JSON.stringify(meta.body.warnings ?? []).includes(named), `${named} in ${JSON.stringify(meta.body.warnings)}`);
          for (const p of ['/api/metrics?keys=perf/actor_train_mfu,rollout/rewards_mean', '/api/advisory']) {
            assert.equal(answers.find((a) => a.path === p)!.status, 200, p);
          }
        });
      } finally {
        run.dispose();
      }
    });
  }
});

describe('symlinks never lead the server out of the run', () => {
  test('a symlinked --cache-dir inside the run is refused after resolving it', async () => {
    const run = copyFixtureRun();
    const outside = mkdtempSync(join(tmpdir(), 'rlsight-link-'));
    try {
      symlinkSync(join(run.dir, 'rollout_data'), join(outside, 'cache'));
      await assert.rejects(openRun(run.dir, { cacheDir: join(outside, 'cache') }), /outside the run/);
      // and the run reached through a symlink, with the cache given by its real path inside
      symlinkSync(run.dir, join(outside, 'run-link'));
      await assert.rejects(openRun(join(outside, 'run-link'), { cacheDir: join(run.dir, 'cache') }), /outside the run/);
      assert.ok(!existsSync(join(run.dir, 'cache')));
    } finally {
      rmSync(outside, { recursive: true, force: true });
      run.dispose();
    }
  });

  test('dump, mirror, sidecar and telemetry symlinks to files outside the run are refused, and a symlink loop too', async () => {
    const run = copyFixtureRun();
    const outside = mkdtempSync(join(tmpdir(), 'rlsight-outside-'));
    try {
      for (const rel of ['rollout_data/1.pt', 'dashboard_columns/rollout_2.parquet', 'trajectory/0.jsonl', 'dashboard/gpu_util/19700112_13.jsonl', 'tokenizer/tokenizer.json']) {
        const src = join(run.dir, rel);
        const dst = join(outside, rel.replaceAll('/', '_'));
        renameSync(src, dst);
        symlinkSync(dst, src);
      }
      symlinkSync('loop-b.pt', join(run.dir, 'rollout_data', 'loop-a.pt'));
      symlinkSync('loop-a.pt', join(run.dir, 'rollout_data', 'loop-b.pt'));
      symlinkSync('5.pt', join(run.dir, 'rollout_data', '5.pt'));
      await withServer(run.dir, async (s) => {
        const answers = await ask(s.url, [...everyEndpoint(), '/api/rollout/5/summary']);
        assert.deepEqual(answers.filter((a) => a.status === 0 || a.status >= 500).map((a) => `${a.status} ${a.path}`), []);
        for (const p of ['/api/rollout/1/summary', '/api/rollout/2/sample/64/tokens', '/api/rollout/0/sample/0/messages']) {
          const a = answers.find((x) => x.path === p)!;
          assert.equal(a.status, 422, `${p}: ${a.status} ${JSON.stringify(a.body)}`);
          assert.match(a.body.detail, /outside/);
        }
        const tokens = answers.find((x) => x.path === '/api/rollout/0/sample/0/tokens')!;
        assert.equal(tokens.status, 200);
        assert.equal(tokens.body.tokens?.[0]?.text ?? null, null, 'the tokenizer outside the run is not read');
        const [meta] = await ask(s.url, ['/api/meta']);
        const text = JSON.stringify(meta.body.warnings);
        for (const f of ['dashboard/gpu_util/19700112_13.jsonl', 'rollout_data/5.pt', 'rollout_data/1.pt', 'trajectory/0.jsonl', 'dashboard_columns/rollout_2.parquet']) assert.ok(text.includes(f), `${f} in ${text}`);
        assert.ok(!text.includes(outside), 'no path outside the run appears');
      });
    } finally {
      rmSync(outside, { recursive: true, force: true });
      run.dispose();
    }
  });
});
