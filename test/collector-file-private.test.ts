// The server reads a run directory that a collector is writing; `dashboard/collector.json` (the
// run's ingest token) is never part of any answer, whatever the path asks for.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openRun } from '../src/commands/openRun.ts';
import { startServer } from '../src/server/listen.ts';
import { copyFixtureRun } from './support/fixtures.ts';

describe('collector.json stays private', () => {
  it('no route, static path or traversal serves it', async () => {
    const copy = copyFixtureRun();
    const token = 'tok-' + 'x'.repeat(40);
    writeFileSync(join(copy.dir, 'dashboard', 'collector.json'), JSON.stringify({ address: 'http://127.0.0.1:7789', token, pid: 1, started_ts: 1 }), { mode: 0o600 });
    const server = await startServer(await openRun(copy.dir), { port: 0 });
    try {
      const paths = [
        '/collector.json',
        '/dashboard/collector.json',
        '/static/collector.json',
        '/static/../dashboard/collector.json',
        '/static/%2e%2e/%2e%2e/dashboard/collector.json',
        '/static/..%2fdashboard%2fcollector.json',
        '/api/meta',
        '/api/rlsight/lanes',
        '/api/timeline/topology',
        '/api/rlsight/health',
        '/api/rlsight/export/metrics?format=csv',
        '/api/events',
      ];
      for (const p of paths) {
        const ctl = new AbortController();
        const res = await fetch(new URL(p, server.url), { signal: ctl.signal });
        // the event stream never ends: its first bytes are enough
        const reader = res.body!.getReader();
        let text = '';
        for (let i = 0; i < 4; i++) {
          const { value, done } = await reader.read();
          if (done) break;
          text += Buffer.from(value).toString('utf8');
          if (p !== '/api/events') continue;
          if (text.length > 0) break;
        }
        ctl.abort();
        assert.ok(!text.includes(token), `${p} served the token`);
        assert.ok(!text.includes('collector.json') || res.status === 404, `${p} names the file`);
      }
    } finally {
      await server.close();
      copy.dispose();
    }
  });
});
