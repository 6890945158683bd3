import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newToken } from './collectorFile.ts';

test('a new token is 256 random bits a command line takes as a value: never starting with "-", only URL-safe characters', () => {
  const tokens = Array.from({ length: 2_000 }, newToken);
  // (a base64url token starts with "-" once in 64)
  assert.deepEqual(tokens.filter((t) => t.startsWith('-')), []);
  for (const t of tokens) assert.match(t, /^[A-Za-z0-9_-]{43,}$/);
  assert.equal(new Set(tokens).size, tokens.length);
});
