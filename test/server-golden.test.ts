// Replays every request the reference answered (golden/index.json) against our server over a copy of the run.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openRun } from '../src/commands/openRun.ts';
import { type RunningServer, startServer } from '../src/server/listen.ts';
import { copyFixtureRun, diffJson, readFixtureJson, type RunCopy } from './support/fixtures.ts';

interface IndexEntry {
  file: string;
  request: string;
  status: number;
  content_type: string;
  normalized: string[];
  deliberately_bad: boolean;
  note: string;
}

const index = readFixtureJson<{ entries: IndexEntry[] }>('miles-demo', 'golden', 'index.json').entries;

/** The reference's framework answers (422 validation, 500 assertion) are 400s here. */
const expectedStatus = (status: number): number => (status === 422 || status === 500 ? 400 : status);

/** The parameter a reference 422 names in its `loc`, which our 400 must name too. */
function namedParam(body: any): string | null {
  const loc = Array.isArray(body?.detail) ? body.detail[0]?.loc : null;
  return Array.isArray(loc) ? String(loc[loc.length - 1]) : null;
}

describe('the reference API, request by request', () => {
  let copy: RunCopy;
  let server: RunningServer;
  before(async () => {
    copy = copyFixtureRun();
    const run = await openRun(copy.dir, { tensorLru: 2 });
    server = await startServer(run, { port: 0 });
  });
  after(async () => {
    await server?.close();
    copy?.dispose();
  });

  test('index lists 301 requests', () => assert.equal(index.length, 301));

  for (const entry of index) {
    test(`${entry.file} ${entry.request}`, async () => {
      const golden = readFixtureJson('miles-demo', 'golden', entry.file);
      const res = await fetch(new URL(entry.request, server.url));
      const want = expectedStatus(entry.status);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const text = Buffer.from(bytes).toString('utf8');
      assert.equal(res.status, want, `status ${res.status} != ${want}: ${text.slice(0, 300)}`);
      if (want >= 400) {
        const detail = JSON.parse(text).detail;
        assert.equal(typeof detail, 'string');
        if (entry.status === 400) assert.equal(detail, golden.body.detail);
        if (entry.status === 422) {
          const param = namedParam(golden.body);
          assert.ok(param && detail.includes(param), `400 detail ${JSON.stringify(detail)} should name ${param}`);
        }
        if (golden.headers?.['cache-control']) assert.equal(res.headers.get('cache-control'), golden.headers['cache-control']);
        return;
      }
      assert.equal(res.headers.get('content-type')?.split(';')[0], entry.content_type);
      if (entry.content_type === 'application/octet-stream') {
        assert.equal(Buffer.from(bytes).toString('base64'), golden.body.base64);
        return;
      }
      const d = diffJson(JSON.parse(text), golden.body);
      assert.equal(d, null, d ?? '');
    });
  }
});
