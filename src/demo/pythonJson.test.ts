import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PyFloat, pyDumps, pyFloat, pyString } from './pythonJson.ts';

describe('pyFloat', () => {
  it('prints floats as Python repr does', () => {
    // Expected strings are Python 3 `repr(float(x))`.
    const cases: [number, string][] = [
      [0, '0.0'],
      [-0, '-0.0'],
      [1, '1.0'],
      [1000030, '1000030.0'],
      [0.1 + 0.2, '0.30000000000000004'],
      [1e-6, '1e-06'],
      [1.5e-5, '1.5e-05'],
      [0.0001, '0.0001'],
      [1e16, '1e+16'],
      [123456789012345680000, '1.2345678901234568e+20'],
      [1796016918.462, '1796016918.462'],
      [-2.5, '-2.5'],
    ];
    for (const [x, want] of cases) assert.equal(pyFloat(x), want, String(x));
  });

  it('refuses non-finite numbers, which JSON cannot carry', () => {
    assert.throws(() => pyFloat(NaN), RangeError);
    assert.throws(() => pyFloat(Infinity), RangeError);
  });
});

describe('pyDumps', () => {
  it('writes the three styles miles uses', () => {
    const v = { a: [1, new PyFloat(2)], b: { c: 'x' }, e: [] };
    assert.equal(pyDumps(v), '{"a": [1, 2.0], "b": {"c": "x"}, "e": []}');
    assert.equal(pyDumps(v, { compact: true }), '{"a":[1,2.0],"b":{"c":"x"},"e":[]}');
    assert.equal(pyDumps({ a: 1, b: [true, null] }, { indent: 1 }), '{\n "a": 1,\n "b": [\n  true,\n  null\n ]\n}');
  });

  it('escapes non-ASCII like ensure_ascii', () => {
    assert.equal(pyString('é\u2028"'), '"\\u00e9\\u2028\\""');
  });
});
