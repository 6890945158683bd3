import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiUrl, redactPaths } from './api.ts';

test('absolute paths in server messages are reduced to the file name', () => {
  assert.equal(redactPaths("No such file or directory: '/srv/runs/abc/rollout_data/42.pt'"), "No such file or directory: '…/42.pt'");
  assert.equal(redactPaths('unknown lane selector kind bogus'), 'unknown lane selector kind bogus');
});

test('query parameters skip empty values and keep booleans', () => {
  assert.equal(apiUrl('timeline/gpu', { lanes: undefined, t0: 1, eval: false, x: '' }), './api/timeline/gpu?t0=1&eval=false');
  assert.equal(apiUrl('/api/meta'), './api/meta');
});

function stubFetch(answers: Response[]): string[] {
  const seen: string[] = [];
  globalThis.fetch = (async (url: string) => {
    seen.push(url);
    return answers.shift()!;
  }) as typeof fetch;
  return seen;
}

test('503 is retried while a "still writing" note is up, then the answer comes through', async () => {
  const { getJson, stillWriting } = await import('./api.ts');
  stubFetch([new Response('{"detail":"dump still being written"}', { status: 503 }), new Response('{"ok":1}', { status: 200 })]);
  const notes: number[] = [];
  const off = stillWriting.subscribe((v) => notes.push(v.length));
  const r = await getJson<{ ok: number }>('rollout/3/summary');
  off();
  assert.deepEqual(r, { ok: 1 });
  assert.deepEqual(notes, [1, 0], 'the note appears during the retry and goes away after');
});

test('errors carry the server message: string detail, validation lists, plain-text 500s, no paths', async () => {
  const { getJson, errorText, ApiError } = await import('./api.ts');
  stubFetch([
    new Response(JSON.stringify({ detail: "'sample 9 has no recorded conversation'" }), { status: 404 }),
    new Response(JSON.stringify({ detail: [{ loc: ['query', 't0'], msg: 'Input should be a valid number' }] }), { status: 422 }),
    new Response('Internal Server Error', { status: 500, headers: { 'content-type': 'text/plain' } }),
    new Response(JSON.stringify({ detail: "[Errno 2] No such file or directory: '/data/run/rollout_data/99.pt'" }), { status: 404 }),
  ]);
  const texts: string[] = [];
  for (let i = 0; i < 4; i++) {
    try {
      await getJson('x');
      assert.fail('should throw');
    } catch (e) {
      assert.ok(e instanceof ApiError);
      texts.push(errorText(e));
    }
  }
  assert.equal(texts[0], 'sample 9 has no recorded conversation');
  assert.equal(texts[1], 't0: Input should be a valid number');
  assert.equal(texts[2], 'server error (500): Internal Server Error');
  assert.equal(texts[3], "[Errno 2] No such file or directory: '…/99.pt'");
  assert.ok(texts.every((t) => !t.includes('[object Object]')));
});
