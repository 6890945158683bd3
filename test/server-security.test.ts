// Request gatekeeping over a real socket: exactly one Host header, and links from run metadata only for http(s).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startServer, type RunningServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { copyFixtureRun, type RunCopy } from './support/fixtures.ts';

/** Sends raw request bytes and returns the status line's code and the body (read to the connection's close). */
function rawAnswer(port: number, request: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(request));
    let data = '';
    sock.on('data', (d) => (data += d.toString('latin1')));
    sock.on('error', reject);
    sock.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0), body: data.slice(data.indexOf('\r\n\r\n') + 4) }));
  });
}

async function rawStatus(port: number, request: string): Promise<number> {
  return (await rawAnswer(port, request)).status;
}

/** A server over a copy of the fixture run for one suite (started before its tests, stopped after them). */
function servedFixture(): { readonly server: RunningServer } {
  let run: RunCopy;
  let server: RunningServer;
  before(async () => {
    run = copyFixtureRun();
    server = await startServer(await openRun(run.dir), { port: 0 });
  });
  after(async () => {
    await server.close();
    run.dispose();
  });
  return {
    get server() {
      return server;
    },
  };
}

describe('Host header', () => {
  const served = servedFixture();

  test('one loopback Host is answered', async () => {
    assert.equal(await rawStatus(served.server.port, `GET /api/meta HTTP/1.1\r\nHost: 127.0.0.1:${served.server.port}\r\nConnection: close\r\n\r\n`), 200);
  });

  test('two Host headers are refused, whichever comes first', async () => {
    for (const [a, b] of [
      [`127.0.0.1:${served.server.port}`, 'evil.example'],
      ['evil.example', `127.0.0.1:${served.server.port}`],
      [`127.0.0.1:${served.server.port}`, `127.0.0.1:${served.server.port}`],
    ]) {
      const status = await rawStatus(served.server.port, `GET /api/meta HTTP/1.1\r\nHost: ${a}\r\nHost: ${b}\r\nConnection: close\r\n\r\n`);
      assert.ok(status === 400 || status === 403, `Host ${a} then ${b}: ${status}`);
    }
  });

  test('a Host list in one header, or a Host that is no host name, is refused with a message', async () => {
    const list = await rawAnswer(served.server.port, `GET /api/meta HTTP/1.1\r\nHost: 127.0.0.1:${served.server.port}, evil.example\r\nConnection: close\r\n\r\n`);
    assert.equal(list.status, 400);
    assert.equal(JSON.parse(list.body).detail, 'exactly one Host is accepted, got a list');
    const bad = await rawAnswer(served.server.port, `GET /api/meta HTTP/1.1\r\nHost: local host\r\nConnection: close\r\n\r\n`);
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.body).detail, /^the Host header "local host" is not a host name/);
  });
});

describe('requests refused before any route', () => {
  const served = servedFixture();
  const get = (path: string, extra = ''): Promise<{ status: number; body: string }> =>
    rawAnswer(served.server.port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${served.server.port}\r\n${extra}Connection: close\r\n\r\n`);

  test('a path with a dot segment is refused, not resolved into another route', async () => {
    for (const path of ['/api/runs/%2e%2e/meta', '/api/runs/../meta', '/api/rollout/0/%2E/summary']) {
      const a = await get(path);
      assert.equal(a.status, 400, path);
      assert.match(JSON.parse(a.body).detail, /^path: a "\.\.?" segment is refused/, path);
    }
    assert.equal((await get('/api/meta')).status, 200);
  });

  test('a URL over the header limit, or bytes that are not HTTP, get a worded answer', async () => {
    const long = await get(`/api/rlsight/search?q=${'x'.repeat(100_000)}`);
    assert.equal(long.status, 431);
    assert.match(JSON.parse(long.body).detail, /^the request's URL and headers are over \d+ KiB: shorten the query$/);
    const junk = await rawAnswer(served.server.port, 'NOT HTTP AT ALL\r\n\r\n');
    assert.equal(junk.status, 400);
    assert.match(JSON.parse(junk.body).detail, /^not a well-formed HTTP request/);
    assert.equal((await get('/api/meta')).status, 200);
  });
});

describe('links from run metadata', () => {
  for (const [host, expected] of [
    ['javascript:alert(1)//', null],
    ['JavaScript:alert(1)', null],
    ['data:text/html,x', null],
    ['//evil.example', null],
    ['http://wandb.local:8080/', 'http://wandb.local:8080/team/proj/runs/abc'],
    ['https://wandb.ai', 'https://wandb.ai/team/proj/runs/abc'],
  ] as const) {
    test(`wandb_host ${JSON.stringify(host)} gives wandb_url ${JSON.stringify(expected)}`, async () => {
      const run = copyFixtureRun();
      try {
        const metaPath = join(run.dir, 'dashboard', 'meta.json');
        writeFileSync(
          metaPath,
          JSON.stringify({ run_name: 'r', start_ts: 1000000, schema_version: 1, args: { wandb_team: 'team', wandb_project: 'proj', wandb_run_id: 'abc', wandb_host: host } }),
        );
        const open = await openRun(run.dir);
        assert.equal((await open.meta({ follow: false, useUtilizationOverview: false })).wandb_url, expected);
      } finally {
        run.dispose();
      }
    });
  }
});

describe('the app folder', () => {
  test('a symlink inside the built app that leads out of it is not served', async () => {
    const { mkdtempSync, mkdirSync, rmSync, symlinkSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { resolveStatic } = await import('../src/server/static.ts');
    const base = mkdtempSync(join(tmpdir(), 'rlsight-dist-'));
    try {
      const dist = join(base, 'dist');
      mkdirSync(join(dist, 'assets'), { recursive: true });
      writeFileSync(join(dist, 'assets', 'app.js'), 'ok');
      writeFileSync(join(base, 'secret.txt'), 'no');
      symlinkSync(join(base, 'secret.txt'), join(dist, 'assets', 'leak.js'));
      symlinkSync('app.js', join(dist, 'assets', 'alias.js'));
      assert.equal(resolveStatic(dist, '/assets/app.js'), join(dist, 'assets', 'app.js'));
      assert.equal(resolveStatic(dist, '/assets/alias.js'), join(dist, 'assets', 'alias.js'));
      assert.equal(resolveStatic(dist, '/assets/leak.js'), null);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
