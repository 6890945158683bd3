// `rlsight serve` flags that could not work are refused before any run is read (exit 2, naming the flag);
// the banner says which folder each run id is, and a run joining a followed root is said; `--eval-datasets` is
// checked against the datasets found.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { allowHostFlag } from '../src/commands/serve.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { ageTree, fixturePath } from './support/fixtures.ts';

const MILES = fixturePath('miles-demo', 'run');
const SLIME = fixturePath('slime-trace');

before(() => ensureCliBuilt());

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [RLSIGHT_BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Starts `rlsight serve ARGS`, resolves once `stderr`/`stdout` (together) match `until`; the child is stopped by `stop`. */
function serving(args: string[], until: RegExp): { done: Promise<string>; child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [RLSIGHT_BIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let seen = '';
  const done = new Promise<string>((ok, fail) => {
    const look = (d: Buffer): void => {
      seen += d;
      if (until.test(seen)) ok(seen);
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    child.once('exit', (code) => fail(new Error(`rlsight serve exited with ${code}: ${seen}`)));
    setTimeout(() => fail(new Error(`no ${until} within 60 s: ${seen}`)), 60_000).unref();
  });
  return { done, child, output: () => seen };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

describe('serve flags that name no usable value are usage errors naming the flag', () => {
  test('--prometheus: not an http(s) URL', () => {
    for (const bad of ['notaurl', 'localhost:9090', 'ftp://x']) {
      const r = cli('serve', MILES, '--no-cache', '--port', '8887', '--prometheus', bad);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^rlsight: --prometheus: expected the Prometheus server's http\\(s\\) URL.*got '${bad}'\\n$`));
    }
  });

  test('--host: a name that does not resolve, an address not this machine’s, not a host at all', () => {
    const unresolved = cli('serve', MILES, '--no-cache', '--port', '8887', '--host', 'nosuchhost.invalid');
    assert.equal(unresolved.code, 2, unresolved.stderr);
    assert.match(unresolved.stderr, /^rlsight: --host: cannot listen on nosuchhost\.invalid: the name does not resolve/);
    const foreign = cli('serve', MILES, '--no-cache', '--port', '8887', '--host', '192.0.2.1');
    assert.equal(foreign.code, 2, foreign.stderr);
    assert.match(foreign.stderr, /^rlsight: --host: cannot listen on 192\.0\.2\.1: not an address of this machine/);
    const url = cli('serve', MILES, '--no-cache', '--port', '8887', '--host', 'http://x');
    assert.equal(url.code, 2, url.stderr);
    assert.match(url.stderr, /^rlsight: --host: expected a host name or address to listen on .*got 'http:\/\/x'/);
  });

  test('--allow-host: a URL, NAME:PORT or an empty value would never match a Host header', () => {
    for (const [bad, meant] of [
      ['http://bar', 'bar'],
      ['https://bar.example:8443/x', 'bar.example'],
      ['bar:8080', 'bar'],
      ['[::1]:80', '[::1]'],
    ]) {
      const r = cli('serve', MILES, '--no-cache', '--port', '8887', '--allow-host', bad);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^rlsight: --allow-host: expected a host name .*got '${bad.replace(/[[\].]/g, '\\$&')}': give --allow-host ${meant.replace(/[[\].]/g, '\\$&')}\\n$`));
    }
    const empty = cli('serve', MILES, '--no-cache', '--port', '8887', '--allow-host', '');
    assert.equal(empty.code, 2, empty.stderr);
    assert.match(empty.stderr, /^rlsight: --allow-host: expected a host name, got an empty value/);
    // what a Host header carries: names, IPv4, IPv6 in brackets (a bare one is put in them)
    assert.deepEqual(allowHostFlag(['bar', 'Bar.example', '10.0.0.2', '[fe80::1]', '::1']), ['bar', 'Bar.example', '10.0.0.2', '[fe80::1]', '[::1]']);
  });

  test('the same checks for dump files given as FILE.pt or a GLOB', () => {
    const glob = join(SLIME, 'rollout_data', '*.pt');
    for (const [flag, value, said] of [
      ['--prometheus', 'localhost:9090', /^rlsight: --prometheus: expected the Prometheus server's http\(s\) URL/],
      ['--host', 'http://x', /^rlsight: --host: expected a host name or address to listen on/],
      ['--allow-host', 'http://bar', /^rlsight: --allow-host: expected a host name .*give --allow-host bar/],
      ['--eval-datasets', 'a,,b', /^rlsight: --eval-datasets: .*an empty name in 'a,,b'/],
    ] as const) {
      const r = cli('serve', glob, '--no-cache', '--port', '8887', flag, value);
      assert.equal(r.code, 2, `${flag}: ${r.stderr}`);
      assert.match(r.stderr, said);
    }
  });

  test('--eval-datasets: an empty name or one given twice', () => {
    for (const [bad, why] of [
      ['a,,b', /an empty name in 'a,,b'/],
      ['', /an empty name in ''/],
      ['a,', /an empty name in 'a,'/],
      ['a,b,a', /'a' is given twice/],
    ] as const) {
      const r = cli('serve', SLIME, '--no-cache', '--port', '8887', '--eval-datasets', bad);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^rlsight: --eval-datasets: /);
      assert.match(r.stderr, why);
    }
  });
});

describe('serve --runs ROOT: runs sharing a folder name', () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'rlsight-runs-'));
    for (const team of ['teamA', 'teamB']) {
      mkdirSync(join(root, team));
      cpSync(MILES, join(root, team, 'healthy'), { recursive: true });
    }
    cpSync(MILES, join(root, 'solo'), { recursive: true });
    ageTree(root);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test('the banner says which folder each id told by its path is', { timeout: 90_000 }, async () => {
    const s = serving(['--runs', root, '--no-cache', '--port', '0'], /runs: .*\n/);
    try {
      const out = await s.done;
      const line = /runs: (.*)\n/.exec(out)![1];
      assert.deepEqual(line.split(', ').sort(), ['solo', 'teamA-healthy = teamA/healthy', 'teamB-healthy = teamB/healthy']);
    } finally {
      await stop(s.child);
    }
  });
});

describe('serve --runs ROOT --follow: a run that starts later', () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'rlsight-runs-follow-'));
    cpSync(MILES, join(root, 'first'), { recursive: true });
    ageTree(root);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test('is said on its own line once it is served', { timeout: 90_000 }, async () => {
    const s = serving(['--runs', root, '--follow', '--no-cache', '--port', '0'], /rlsight serving .*\n/);
    try {
      await s.done;
      assert.doesNotMatch(s.output(), /joined/);
      mkdirSync(join(root, 'team'));
      cpSync(MILES, join(root, 'team', 'later'), { recursive: true });
      ageTree(join(root, 'team'));
      const deadline = Date.now() + 60_000;
      while (!/joined .*\n/.test(s.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      assert.match(s.output(), /\njoined runs: later\n/);
    } finally {
      await stop(s.child);
    }
  });
});

describe('serve --eval-datasets against the datasets an eval dump holds', () => {
  // slime-trace's eval_0.pt holds two datasets (aime24, then gsm8k_test: the sample index starts again)
  test('fewer names than datasets: the unnamed ones are said', { timeout: 90_000 }, async () => {
    const s = serving([SLIME, '--no-cache', '--port', '0', '--eval-datasets', 'aime24'], /warning: --eval-datasets.*\n/);
    try {
      const out = await s.done;
      assert.match(out, /warning: --eval-datasets: 1 name given \(aime24\), but rollout_data\/eval_0\.pt holds 2 eval datasets \(.*\); the unnamed one is labelled dataset1\n/);
    } finally {
      await stop(s.child);
    }
  });

  test('more names than datasets: the unused ones are said; as many as found: nothing', { timeout: 90_000 }, async () => {
    const s = serving([SLIME, '--no-cache', '--port', '0', '--eval-datasets', 'aime24,gsm8k_test,math500'], /warning: --eval-datasets.*\n/);
    try {
      assert.match(await s.done, /warning: --eval-datasets: 3 names given \(aime24, gsm8k_test, math500\), but rollout_data\/eval_0\.pt holds 2 eval datasets .*; math500 is not used\n/);
    } finally {
      await stop(s.child);
    }
    const right = serving([SLIME, '--no-cache', '--port', '0', '--eval-datasets', 'aime24,gsm8k_test'], /serving http:\/\/\S+\//);
    try {
      const url = /serving (http:\/\/\S+\/)/.exec(await right.done)![1]!;
      // the eval dump is read for the metrics a moment later; a warning would follow by then
      const meta = (await (await fetch(`${url}api/meta`)).json()) as { metric_keys: string[] };
      assert.ok(meta.metric_keys.some((k) => k.startsWith('eval/gsm8k_test')), JSON.stringify(meta.metric_keys));
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      await stop(right.child);
    }
    assert.doesNotMatch(right.output(), /--eval-datasets/);
  });
});
