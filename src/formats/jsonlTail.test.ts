import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { readCompleteLines, readFirstLine, readLastCompleteLine, unterminatedBytes } from './jsonlTail.ts';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'rlsight-tail-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function collect(path: string, offset: number, chunkBytes?: number): { text: string; offset: number } {
  let text = '';
  const r = readCompleteLines(path, offset, (c) => (text += c.buf.subarray(0, c.end).toString('utf8')), chunkBytes);
  return { text, offset: r.offset };
}

test('reads only complete lines and resumes at the byte offset', () => {
  const f = join(dir, 'a.jsonl');
  writeFileSync(f, 'one\ntwo\nthr');
  const a = collect(f, 0);
  assert.deepEqual(a, { text: 'one\ntwo\n', offset: 8 });
  assert.deepEqual(collect(f, a.offset), { text: '', offset: 8 });
  appendFileSync(f, 'ee\nfo');
  assert.deepEqual(collect(f, a.offset), { text: 'three\n', offset: 14 });
});

test('a missing file reads as nothing', () => {
  assert.deepEqual(collect(join(dir, 'missing.jsonl'), 0), { text: '', offset: 0 });
});

test('any chunk size gives the same lines, including lines longer than a chunk', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ maxLength: 40 }).map((s) => s.replace(/\n/g, ' ')), { maxLength: 20 }), fc.string({ maxLength: 10 }), fc.integer({ min: 1, max: 64 }), (lines, tail, chunk) => {
      const f = join(dir, 'p.jsonl');
      const body = lines.map((l) => `${l}\n`).join('');
      writeFileSync(f, body + tail.replace(/\n/g, ' '));
      const got = collect(f, 0, chunk);
      assert.equal(got.text, body);
      assert.equal(got.offset, Buffer.byteLength(body));
    }),
    { numRuns: 200 },
  );
});

test('edge lines: first complete line, last complete line within the final window', () => {
  const f = join(dir, 'e.jsonl');
  writeFileSync(f, 'first\nmiddle\nlast\npartial');
  assert.equal(readFirstLine(f)?.toString(), 'first');
  assert.equal(readLastCompleteLine(f)?.toString(), 'last');
  assert.equal(readLastCompleteLine(f, 8), null, 'a line starting before the window is not used');
  writeFileSync(f, 'no newline');
  assert.equal(readFirstLine(f), null);
  assert.equal(readLastCompleteLine(f), null);
});

test('unterminated bytes: what follows the last newline, however far back it is', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 0, max: 200_000 }), (head, pad) => {
      const b = Buffer.concat([Buffer.from(head), Buffer.alloc(pad % 3 === 0 ? pad : 0, 0x61)]);
      const reads: number[] = [];
      const got = unterminatedBytes(b.length, (start, length) => {
        reads.push(length);
        return b.subarray(start, start + length);
      });
      assert.equal(got, b.length - (b.lastIndexOf(10) + 1));
      assert.ok(reads.reduce((x, y) => x + y, 0) <= b.length, 'no byte read twice');
    }),
    { numRuns: 100 },
  );
  assert.equal(unterminatedBytes(0, () => Buffer.alloc(0)), 0);
});
