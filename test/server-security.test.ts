// Request gatekeeping over a real socket: exactly one Host header, and links from run metadata only for http(s).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startServer, type RunningServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { copyFixtureRun, type RunCopy } from './support/fixtures.ts';

/** Sends raw request bytes and returns the status line's code. */
function rawStatus(port: number, request: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(request));
    let data = '';
    sock.on('data', (d) => {
      data += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(data);
      if (m) {
        sock.destroy();
        resolve(Number(m[1]));
      }
    });
    sock.on('error', reject);
    sock.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0)));
  });
}

describe('Host header', () => {
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

  test('one loopback Host is answered', async () => {
    assert.equal(await rawStatus(server.port, `GET /api/meta HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nConnection: close\r\n\r\n`), 200);
  });

  test('two Host headers are refused, whichever comes first', async () => {
    for (const [a, b] of [
      [`127.0.0.1:${server.port}`, 'evil.example'],
      ['evil.example', `127.0.0.1:${server.port}`],
      [`127.0.0.1:${server.port}`, `127.0.0.1:${server.port}`],
    ]) {
      const status = await rawStatus(server.port, `GET /api/meta HTTP/1.1\r\nHost: ${a}\r\nHost: ${b}\r\nConnection: close\r\n\r\n`);
      assert.ok(status === 400 || status === 403, `Host ${a} then ${b}: ${status}`);
    }
  });

  test('a Host list in one header is refused', async () => {
    const status = await rawStatus(server.port, `GET /api/meta HTTP/1.1\r\nHost: 127.0.0.1:${server.port}, evil.example\r\nConnection: close\r\n\r\n`);
    assert.ok(status === 400 || status === 403, String(status));
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
