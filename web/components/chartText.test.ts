import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cursorStep, indicesInView, readoutText, seriesSummary } from './chartText.ts';

describe('cursorStep', () => {
  it('moves point by point inside the points in view', () => {
    assert.equal(cursorStep('ArrowRight', null, 3, 9), 3);
    assert.equal(cursorStep('ArrowLeft', null, 3, 9), 9);
    assert.equal(cursorStep('ArrowRight', 4, 3, 9), 5);
    assert.equal(cursorStep('ArrowRight', 9, 3, 9), 9);
    assert.equal(cursorStep('ArrowLeft', 3, 3, 9), 3);
    assert.equal(cursorStep('Home', 6, 3, 9), 3);
    assert.equal(cursorStep('End', 6, 3, 9), 9);
  });
  it('pages by a tenth of the points in view and brings a cursor outside the view back into it', () => {
    assert.equal(cursorStep('PageDown', 0, 0, 199), 20);
    assert.equal(cursorStep('PageUp', 5, 0, 199), 0);
    assert.equal(cursorStep('ArrowRight', 50, 3, 9), 9);
  });
  it('has nowhere to go with nothing in view', () => {
    assert.equal(cursorStep('ArrowRight', null, 0, -1), null);
  });
});

describe('indicesInView', () => {
  it('finds the first and last x inside the window', () => {
    assert.deepEqual(indicesInView([0, 1, 2, 3, 4], 0.5, 3.2), [1, 3]);
    assert.deepEqual(indicesInView([0, 1, 2], null, null), [0, 2]);
    assert.deepEqual(indicesInView([0, 1, 2], 5, 9), [0, -1]);
  });
});

describe('readoutText', () => {
  it('says the x, its place and each series, naming one without a value', () => {
    assert.equal(
      readoutText({ label: 'rollout/step', text: '1' }, { at: 2, of: 200 }, [
        { label: 'healthy', text: '0.123' },
        { label: 'collapse', text: null },
      ]),
      'rollout/step 1 (point 2 of 200): healthy 0.123, collapse no value',
    );
  });
  it('counts the series past eight', () => {
    const s = Array.from({ length: 10 }, (_, i) => ({ label: `e${i}`, text: '1' }));
    assert.match(readoutText({ label: 't', text: '0' }, { at: 1, of: 1 }, s), /e7 1, and 2 more series$/);
  });
});

describe('seriesSummary', () => {
  it('gives points, x range, last, min and max, skipping gaps', () => {
    assert.equal(
      seriesSummary('rollout/step', [{ label: 'r', x: [0, 1, 2, 3], y: [0.17, null, 0.66, NaN] }]),
      '2 points, rollout/step 0–2, last 0.660, min 0.170, max 0.660.',
    );
  });
  it('names each series when there are several, and one with no values', () => {
    assert.equal(
      seriesSummary('step', [
        { label: 'a', x: [5], y: [1] },
        { label: 'b', x: [5], y: [null] },
      ]),
      'a: 1 point, step 5–5, last 1, min 1, max 1; b: no values.',
    );
  });
  it('a series on a step key of its own names it', () => {
    assert.equal(
      seriesSummary('rollout/step (a) · tensorboard/step (b)', [
        { label: 'a', x: [0, 1], y: [1, 2], xLabel: 'rollout/step' },
        { label: 'b', x: [0, 39], y: [3, 4], xLabel: 'tensorboard/step' },
      ]),
      'a: 2 points, rollout/step 0–1, last 2, min 1, max 2; b: 2 points, tensorboard/step 0–39, last 4, min 3, max 4.',
    );
  });
});
