// Derived entries written whole: concurrent writers of one entry (two servers of the same run share its
// default cache folder) never leave a reader a torn entry, and a failed write leaves no temp file behind.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DerivedCache } from './derivedCache.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-derived-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('concurrent writers of one entry: every read is one whole text, and no temp file is left', async () => {
  const dir = join(root, 'shared');
  const [a, b] = [new DerivedCache(dir), new DerivedCache(dir)];
  const texts = Array.from({ length: 8 }, (_, i) => JSON.stringify({ writer: i, body: String(i).repeat(3_000_000) }));
  const reads: (string | null)[] = [];
  let writing = true;
  const reader = (async () => {
    while (writing) {
      reads.push(await a.read('entry.json'));
      await new Promise((r) => setImmediate(r));
    }
  })();
  await Promise.all(Array.from({ length: 24 }, (_, k) => (k % 2 ? a : b).write('entry.json', () => texts[k % texts.length]!)));
  writing = false;
  await reader;
  reads.push(await a.read('entry.json'));
  const whole = new Set(texts);
  const torn = reads.filter((r) => r !== null && !whole.has(r));
  assert.equal(torn.length, 0, `${torn.length} of ${reads.length} reads were torn`);
  assert.ok(whole.has(reads.at(-1)!), 'the entry ends as one writer wrote it');
  assert.deepEqual(readdirSync(dir), ['entry.json']);
});

test('a write that fails leaves nothing behind and fails nothing', async () => {
  const file = join(root, 'a-file');
  writeFileSync(file, '');
  await new DerivedCache(join(file, 'sub')).write('x.json', () => '{}');
  // the entry's name is taken by a folder: the text is written, the rename fails
  const dir = join(root, 'taken');
  mkdirSync(join(dir, 'z.json', 'inside'), { recursive: true });
  await new DerivedCache(dir).write('z.json', () => '{}');
  assert.deepEqual(readdirSync(dir), ['z.json']);
});
