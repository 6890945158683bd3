import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyAction } from './keyboard.ts';

test('single-letter keys act only while they are on; Esc always resets', () => {
  assert.equal(keyAction('j', true), 'next');
  assert.equal(keyAction('W', true), 'zoomIn');
  assert.equal(keyAction('j', false), null);
  assert.equal(keyAction('d', false), null);
  assert.equal(keyAction('Escape', false), 'reset');
  assert.equal(keyAction('x', true), null);
});
