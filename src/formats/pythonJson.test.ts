import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { PyFloat, parsePyJson, pyDumps, pyFloat, pyString, type PyJson } from './pythonJson.ts';

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

  it('writes non-finite floats as json.dumps does (allow_nan)', () => {
    assert.equal(pyFloat(NaN), 'NaN');
    assert.equal(pyFloat(Infinity), 'Infinity');
    assert.equal(pyFloat(-Infinity), '-Infinity');
  });
});

describe('pyDumps', () => {
  it('writes the three styles miles uses', () => {
    const v = { a: [1, new PyFloat(2)], b: { c: 'x' }, e: [] };
    assert.equal(pyDumps(v), '{"a": [1, 2.0], "b": {"c": "x"}, "e": []}');
    assert.equal(pyDumps(v, { compact: true }), '{"a":[1,2.0],"b":{"c":"x"},"e":[]}');
    assert.equal(pyDumps({ a: 1, b: [true, null] }, { indent: 1 }), '{\n "a": 1,\n "b": [\n  true,\n  null\n ]\n}');
  });

  it('writes a -0 as the float it was (Python has no integer -0), so it reads back as -0', () => {
    assert.equal(pyDumps({ z: -0, p: 0 }, { compact: true }), '{"z":-0.0,"p":0}');
    assert.ok(Object.is((parsePyJson(pyDumps([-0])) as number[])[0], -0));
  });

  it('escapes non-ASCII like ensure_ascii', () => {
    assert.equal(pyString('é\u2028"'), '"\\u00e9\\u2028\\""');
  });
});

describe('parsePyJson', () => {
  it('reads Python NaN and Infinity, and keeps integral floats as floats when asked', () => {
    assert.deepEqual(parsePyJson('{"a":NaN,"b":-Infinity,"c":"NaN","d":[Infinity]}'), { a: NaN, b: -Infinity, c: 'NaN', d: [Infinity] });
    const v = parsePyJson('{"f":95.0,"i":95,"e":1e3,"x":0.5,"s":"1.0"}', true) as Record<string, PyJson>;
    assert.ok(v.f instanceof PyFloat && v.f.value === 95);
    assert.equal(v.i, 95);
    assert.ok(v.e instanceof PyFloat && v.e.value === 1000);
    assert.equal(v.x, 0.5);
    assert.equal(v.s, '1.0');
  });

  it('refuses what Python refuses, naming where', () => {
    for (const bad of ['{"a":nan}', '{"a":1,}', '[1 2]', '{"a":01}', '"\\u12"', '{"a":1}x', '', '{a:1}']) {
      assert.throws(() => parsePyJson(bad, true), /at character \d+/, bad);
    }
    assert.throws(() => parsePyJson('['.repeat(100) + ']'.repeat(100), true), /nested deeper/);
  });

  it('round-trips what pyDumps writes, floats included', () => {
    const leaf = fc.oneof(
      fc.double().map((x) => (Number.isInteger(x) ? new PyFloat(x) : x) as PyJson),
      fc.integer().map((x) => x as PyJson),
      fc.string().map((x) => x as PyJson),
      fc.boolean().map((x) => x as PyJson),
      fc.constant(null),
    );
    const value = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('v')), fc.dictionary(fc.string(), tie('v'))),
    })).v as fc.Arbitrary<PyJson>;
    fc.assert(
      fc.property(value, fc.boolean(), (v, compact) => {
        const text = pyDumps(v, { compact });
        assert.equal(pyDumps(parsePyJson(text, true), { compact }), text);
      }),
      { numRuns: 500 },
    );
  });
});
