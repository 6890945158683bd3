// The commands leave nothing behind: a busy port fails `demo` and `collect` before they write anything, and
// the temp folders of `demo` and `trace` go when the process ends (SIGINT and SIGTERM too); `serve` refuses
// the slime-only flags on a miles run instead of ignoring them.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { fixturePath } from './support/fixtures.ts';
import { ensureCliBuilt, ensureTracePageBuilt, RLSIGHT_BIN } from './support/cli.ts';

ensureCliBuilt();
ensureTracePageBuilt();

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** A port held by another listener for the whole suite. */
let busy: Server;
let busyPort: number;
/** The TMPDIR the spawned commands see: whatever they leave there is a leftover. */
let tmp: string;

before(async () => {
  busy = createServer();
  await new Promise<void>((ok) => busy.listen(0, '127.0.0.1', ok));
  busyPort = (busy.address() as { port: number }).port;
  tmp = mkdtempSync(join(tmpdir(), 'rlsight-leftovers-'));
});
after(async () => {
  await new Promise<void>((ok) => busy.close(() => ok()));
  rmSync(tmp, { recursive: true, force: true });
});

function cli(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [RLSIGHT_BIN, ...args], { cwd: REPO, encoding: 'utf8', env: { ...process.env, TMPDIR: tmp }, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Spawns the CLI, waits for `ready` on stdout, sends `signal`, and resolves with the exit code. */
function interrupted(args: string[], ready: RegExp, signal: NodeJS.Signals): Promise<{ code: number | null; out: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [RLSIGHT_BIN, ...args], { cwd: REPO, env: { ...process.env, TMPDIR: tmp } });
    let out = '';
    let sent = false;
    child.stdout.on('data', (d) => {
      out += d;
      if (!sent && ready.test(out)) {
        sent = true;
        child.kill(signal);
      }
    });
    child.stderr.on('data', (d) => (out += d));
    child.once('error', fail);
    child.once('exit', (code) => ok({ code, out }));
  });
}

const leftovers = (): string[] => readdirSync(tmp);

describe('a busy port', () => {
  test('demo fails before generating runs and leaves nothing behind', () => {
    const out = join(tmp, 'demo-out');
    const r = cli(['demo', '--port', String(busyPort)]);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /port already in use .*--port/);
    assert.doesNotMatch(r.stdout, /generating/);
    assert.deepEqual(leftovers(), []);
    const given = cli(['demo', '--port', String(busyPort), '--out', out]);
    assert.equal(given.code, 2);
    assert.equal(existsSync(out), false);
  });

  test('demo refuses an empty --out, and an --out already holding its runs, before generating anything', () => {
    const empty = cli(['demo', '--port', '0', '--out', '']);
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /--out: expected a directory, got an empty value/);
    const out = join(tmp, 'demo-again');
    mkdirSync(join(out, 'collapse'), { recursive: true });
    const again = cli(['demo', '--port', '0', '--out', out]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /--out: .*collapse already exists/);
    assert.doesNotMatch(again.stdout, /generating/);
    assert.deepEqual(readdirSync(out), ['collapse']);
    rmSync(out, { recursive: true });
    const file = join(tmp, 'demo-file');
    writeFileSync(file, 'x');
    const onFile = cli(['demo', '--port', '0', '--out', join(file, 'runs')]);
    assert.equal(onFile.code, 2);
    assert.match(onFile.stderr, /--out: .*demo-file is a file, so .* cannot be made under it/);
    rmSync(file);
    assert.deepEqual(leftovers(), []);
  });

  test('collect fails before writing meta.json', () => {
    const run = mkdtempSync(join(tmp, 'collect-run-'));
    try {
      const r = cli(['collect', '--dump-details', run, '--listen', `127.0.0.1:${busyPort}`]);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.match(r.stderr, /port already in use .*--listen/);
      assert.deepEqual(readdirSync(run), [], 'the run folder is untouched');
      const fresh = join(run, 'not-yet');
      assert.equal(cli(['collect', '--dump-details', fresh, '--listen', `127.0.0.1:${busyPort}`]).code, 2);
      assert.equal(existsSync(fresh), false, 'a run folder that did not exist is not created');
    } finally {
      rmSync(run, { recursive: true, force: true });
    }
  });
});

describe('temp folders', () => {
  const pt = fixturePath('slime-trace', 'rollout_data', '0.pt');

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`trace removes its temp folder when stopped with ${signal}`, async () => {
      const r = await interrupted(['trace', pt, '--port', '0'], /serving http/, signal);
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /cache: \S*rlsight-trace-/);
      assert.deepEqual(leftovers(), []);
    });
  }

  test('trace --no-serve keeps the folder it names (it is the output)', () => {
    const r = cli(['trace', pt, '--no-serve']);
    assert.equal(r.code, 0, r.stderr);
    const made = leftovers().filter((d) => d.startsWith('rlsight-trace-'));
    assert.equal(made.length, 1);
    rmSync(join(tmp, made[0]!), { recursive: true, force: true });
  });

  test('demo removes its temp folder when stopped with SIGTERM while serving', async () => {
    const r = await interrupted(['demo', '--port', '0'], /serving http/, 'SIGTERM');
    assert.equal(r.code, 0, r.out);
    assert.deepEqual(leftovers(), []);
  });

  test('demo removes its temp folder when interrupted while generating', async () => {
    const r = await interrupted(['demo', '--port', '0'], /generating a demo run/, 'SIGINT');
    assert.equal(r.code, 130, r.out);
    assert.deepEqual(leftovers(), []);
  });
});

test('serve refuses the slime-only --eval-datasets on a miles run, saying why', () => {
  const run = fixturePath('miles-demo', 'run');
  const r = cli(['serve', '--dump-details', run, '--eval-datasets', '8', '--port', '0']);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /--eval-datasets: only for slime runs/);
});

test('serve refuses --rollout-num-gpus on any run: what it feeds also divides by rollout_time, which no slime dump holds', () => {
  const runs = [['--dump-details', fixturePath('miles-demo', 'run')], [fixturePath('slime-trace')], [fixturePath('slime-trace', 'rollout_data', '*.pt')]];
  for (const run of runs) {
    const r = cli(['serve', ...run, '--rollout-num-gpus', '8', '--port', '0']);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /--rollout-num-gpus: the metrics it feeds \(perf\/tokens_per_gpu_per_sec, perf\/effective_tokens_per_gpu_per_sec\) also divide by slime's rollout_time, which no dump holds/);
  }
  assert.doesNotMatch(cli(['--help']).stdout, /rollout-num-gpus/);
});
