import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parsePromText, PromParseError, type PromSample } from './text.ts';

const escapeLabel = (s: string) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const renderValue = (v: number) => (Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : Object.is(v, -0) ? '-0' : String(v));

describe('Prometheus text parser', () => {
  it('reads SGLang-style families: colons, histograms, exponents, escapes', () => {
    const text = [
      '# HELP sglang:num_running_reqs The number of running requests.',
      '# TYPE sglang:num_running_reqs gauge',
      'sglang:num_running_reqs{engine_type="unified",model_name="Qwen/Qwen3-0.6B",tp_rank="0",dp_rank="1"} 13.0',
      '# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.',
      '# TYPE sglang:time_to_first_token_seconds histogram',
      'sglang:time_to_first_token_seconds_sum{model_name="m"} 2.3518979474117756e+06',
      'sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 10.0',
      'sglang:time_to_first_token_seconds_count{model_name="m"} 10.0',
      'weird{a="x\\"y\\\\z\\nw",} NaN 1712345678000',
      'neg -Inf',
      'pos +Inf # {trace_id="abc"} 1.0 1712345678.1',
      '# a plain comment',
      '',
      '# EOF',
      'this is not a sample',
    ].join('\r\n');
    const r = parsePromText(text);
    assert.equal(r.types.get('sglang:time_to_first_token_seconds'), 'histogram');
    assert.equal(r.help.get('sglang:num_running_reqs'), 'The number of running requests.');
    assert.deepEqual(
      r.samples.map((s) => s.name),
      ['sglang:num_running_reqs', 'sglang:time_to_first_token_seconds_sum', 'sglang:time_to_first_token_seconds_bucket', 'sglang:time_to_first_token_seconds_count', 'weird', 'neg', 'pos'],
    );
    assert.deepEqual(r.samples[0].labels, { engine_type: 'unified', model_name: 'Qwen/Qwen3-0.6B', tp_rank: '0', dp_rank: '1' });
    assert.equal(r.samples[1].value, 2351897.9474117756);
    assert.deepEqual(r.samples[4].labels, { a: 'x"y\\z\nw' });
    assert.ok(Number.isNaN(r.samples[4].value));
    assert.equal(r.samples[5].value, -Infinity);
    assert.equal(r.samples[6].value, Infinity);
  });

  it('names the line of a malformed sample', () => {
    for (const [bad, why] of [
      ['ok 1\nbroken{a="1" 2', /line 2: expected ',' or '}'/],
      ['x{a=1} 2', /quoted value/],
      ['x{a="1",a="2"} 3', /given twice/],
      ['x 1 2 3', /unexpected text/],
      ['x abc', /bad value 'abc'/],
      ['x', /no value/],
      ['x{a="unterminated} 1', /unterminated/],
      ['9x 1', /metric name/],
    ] as const) {
      assert.throws(() => parsePromText(bad), (e: unknown) => e instanceof PromParseError && why.test(e.message), bad);
    }
  });

  it('reads back every sample it is given, whatever the labels and values', () => {
    const name = fc.stringMatching(/^[a-zA-Z_:][a-zA-Z0-9_:]{0,20}$/);
    const labelName = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,10}$/);
    const value = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(NaN, Infinity, -Infinity, -0));
    const sample = fc.record({
      name,
      labels: fc.uniqueArray(fc.tuple(labelName, fc.string({ unit: 'grapheme', maxLength: 12 })), { selector: (t) => t[0], maxLength: 4 }),
      value,
      ts: fc.option(fc.integer({ min: 0, max: 2e12 }), { nil: undefined }),
      spaces: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(sample, { maxLength: 15 }), fc.boolean(), (samples, eof) => {
        const lines: string[] = ['# HELP fam help with \\\\ and \\n', '# TYPE fam counter'];
        for (const s of samples) {
          const sep = s.spaces ? ', ' : ',';
          const labels = s.labels.length ? `{${s.labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(sep)}}` : '';
          lines.push(`${s.name}${labels} ${renderValue(s.value)}${s.ts === undefined ? '' : ` ${s.ts}`}`);
        }
        if (eof) lines.push('# EOF', 'garbage after eof {');
        const got = parsePromText(lines.join('\n') + '\n').samples;
        const want: PromSample[] = samples.map((s) => ({ name: s.name, labels: Object.fromEntries(s.labels), value: s.value }));
        assert.equal(got.length, want.length);
        got.forEach((g, i) => {
          assert.equal(g.name, want[i].name);
          assert.deepEqual({ ...g.labels }, want[i].labels);
          assert.deepEqual(Object.keys(g.labels), Object.keys(want[i].labels));
          assert.ok(Object.is(g.value, want[i].value), `${g.value} vs ${want[i].value}`);
        });
      }),
      { numRuns: 400 },
    );
  });
});
