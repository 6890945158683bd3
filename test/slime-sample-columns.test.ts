// The per-sample columns slime records differently from miles: its weight versions are SGLang's (counted per
// weight update, on no fixed footing against rollout ids), a tool's output goes into the response, and a resumed
// partial rollout adds a weight version to the same turn. Checked against the fixtures' real dumps.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runHealth } from '../src/queries/health.ts';
import { rolloutTable } from '../src/queries/exports.ts';
import { diffSide, stepDiff } from '../src/queries/stepDiff.ts';
import { answersFor } from '../src/queries/slimeAnswers.ts';
import { SlimeRunModel } from '../src/run/slime/index.ts';
import { fixturePath, readFixtureJson } from './support/fixtures.ts';

type Row = Record<string, unknown>;

function open(fixture: string) {
  return answersFor(SlimeRunModel.fromDumpDetails(fixturePath(fixture)));
}

/** The decoded dump (what `torch.load` gave), for the values slime itself recorded. */
function decoded(fixture: string, step: number): { samples: Array<{ index: number; weight_versions: string[]; trace: { events: Array<{ type: string; name: string; attrs?: Record<string, unknown> }> } }> } {
  return readFixtureJson(fixture, 'decoded', `${step}.json`);
}

describe('slime staleness is measured on the weight-version scale', () => {
  it('legacy-pd: SGLang versions 4 and 5 in rollouts 0 and 1 are current weights, not -4 steps behind', async () => {
    const run = open('slime-trace-legacy-pd');
    for (const step of [0, 1]) {
      const t = await run.summary(step, false);
      const versions = decoded('slime-trace-legacy-pd', step).samples.flatMap((s) => s.weight_versions.map(Number));
      assert.deepEqual([...new Set(versions)], [step + 4], 'one weight version per rollout, 4 ahead of the rollout id');
      assert.deepEqual(t.rows.map((r) => r.staleness), t.rows.map(() => 0), `step ${step}`);
      assert.equal(t.staleness_from, 'newest_version');
    }
    const health = await runHealth(run);
    for (const row of health.rows) {
      const cell = row.cells.staleness!;
      assert.equal(cell.value, 0);
      assert.equal(cell.level, 'ok');
      assert.match(cell.detail, /^oldest weights 0 weight updates behind the step's newest \(sample \d+: version [45], newest [45]\)$/);
    }
    const diff = stepDiff(await diffSide(run, 0, false), await diffSide(run, 1, false));
    const stale = diff.distributions.find((d) => d.metric === 'staleness')!;
    assert.deepEqual([stale.a.mean, stale.b.mean, stale.delta_mean], [0, 0, 0]);
    const exported = await rolloutTable(run, 0, false);
    const col = exported.columns.indexOf('staleness');
    assert.ok(col >= 0);
    for (const r of exported.rows) assert.equal(r[col], 0);
  });

  it('slime-trace: the samples carried over from rollout 0 (weight version 0) are one update behind rollout 1', async () => {
    const run = open('slime-trace');
    const rows = (await run.summary(1, false)).rows as Row[];
    const dump = decoded('slime-trace', 1).samples;
    const newest = Math.max(...dump.flatMap((s) => s.weight_versions.map(Number)));
    const want = dump.map((s) => newest - Math.min(...s.weight_versions.map(Number)));
    assert.deepEqual(rows.map((r) => r.staleness), want);
    // samples 16-18: partial rollout begun on version 0 (18 resumed on version 1); every other sample on version 1
    assert.deepEqual(rows.filter((r) => r.staleness === 1).map((r) => r.sample_index), [16, 17, 18]);
    const cell = (await runHealth(run)).rows.find((r) => r.step === 1)!.cells.staleness!;
    assert.equal(cell.value, 1);
    assert.equal(cell.detail, "oldest weights 1 weight update behind the step's newest (sample 16: version 0, newest 1)");
  });
});

describe('slime turns and tool calls come from the trace', () => {
  it('agentic samples count their tool_call spans and turns; a resumed partial rollout is not a second turn', async () => {
    const run = open('slime-trace');
    const rows = new Map(((await run.summary(1, false)).rows as Row[]).map((r) => [r.sample_index as number, r]));
    // samples 20-23 are agentic: tool_call / tool_execution spans, tool output in the response tokens
    assert.deepEqual([20, 21, 22, 23].map((i) => rows.get(i)!.tool_calls), [2, 2, 1, 3]);
    assert.deepEqual([20, 21, 22, 23].map((i) => rows.get(i)!.turns), [3, 3, 2, 4]);
    // what the custom generate function recorded itself: generate_with_tool's end attrs
    for (const s of decoded('slime-trace', 1).samples) {
      const own = s.trace.events.find((e) => e.type === 'span_end' && e.name === 'generate_with_tool')?.attrs;
      const r = rows.get(s.index)!;
      if (own) {
        assert.equal(r.tool_calls, own.num_tool_calls, `sample ${s.index} tool calls`);
        assert.equal(r.turns, own.num_turns, `sample ${s.index} turns`);
        assert.equal(r.tool_calls, s.trace.events.filter((e) => e.type === 'span_start' && e.name === 'tool_call').length);
      } else {
        // no turn or tool-call marks: not known (slime's default generate records none)
        assert.equal(r.tool_calls, null, `sample ${s.index} tool calls`);
        assert.equal(r.turns, null, `sample ${s.index} turns`);
      }
    }
    // sample 22 retried a failed request of turn 1: two turns, not three requests
    // sample 18: aborted in rollout 0 and resumed in rollout 1, two weight versions, one turn (no turn marks)
    assert.deepEqual(decoded('slime-trace', 1).samples.find((s) => s.index === 18)!.weight_versions, ['0', '1']);
    assert.equal(rows.get(18)!.turns, null);
    const exported = await rolloutTable(run, 1, false);
    const at = (name: string, index: number) => exported.rows.find((r) => r[exported.columns.indexOf('sample_index')] === index)![exported.columns.indexOf(name)];
    assert.equal(at('tool_calls', 21), 2);
    assert.equal(at('turns', 18), null);
  });

  it('legacy-pd: the same from the older trace layout', async () => {
    const run = open('slime-trace-legacy-pd');
    const r0 = new Map(((await run.summary(0, false)).rows as Row[]).map((r) => [r.sample_index as number, r]));
    assert.deepEqual([4, 5, 6, 7].map((i) => [r0.get(i)!.turns, r0.get(i)!.tool_calls]), [[2, 1], [3, 2], [4, 3], [2, 1]]);
    assert.deepEqual([0, 1, 2, 3].map((i) => [r0.get(i)!.turns, r0.get(i)!.tool_calls]), [[null, null], [null, null], [null, null], [null, null]]);
    const r1 = new Map(((await run.summary(1, false)).rows as Row[]).map((r) => [r.sample_index as number, r]));
    assert.deepEqual([r1.get(14)!.turns, r1.get(14)!.tool_calls], [2, 1]);
  });
});
