// Rollout samples held per step and call: two calls recording one step at once each complete (the one completed
// last is the step), a call abandoned mid-step is replaced by a later one, and nothing stays "arriving" for ever.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeSampleStep } from '../formats/collectedSamplesWrite.ts';
import type { SampleFields } from '../formats/collectedSamples.ts';
import { SampleSteps, type SampleStepFs } from './sampleSteps.ts';

function memoryFs() {
  const files = new Map<string, Uint8Array>();
  const writes: string[] = [];
  const fs: SampleStepFs = {
    mkdirp: () => {},
    replace: (path, _tmp, data) => {
      files.set(path, data);
      writes.push(path);
    },
    remove: (path) => void files.delete(path),
    touch: (path, text) => void files.set(path, new TextEncoder().encode(text)),
  };
  return { fs, files, writes };
}

const sample = (call: string, i: number): SampleFields => ({ index: i, response: `${call} says ${i}` });
const line = (call: string, i: number, count = 3, rolloutId = 4) =>
  JSON.stringify({ rollout_id: rolloutId, evaluation: false, call, count, position: i, sample: sample(call, i) });
const stepOf = (call: string, count = 3) => encodeSampleStep(Array.from({ length: count }, (_, i) => sample(call, i)));

const FILE = 'run/samples/rollout_000004.parquet';

function setup() {
  const m = memoryFs();
  const logs: string[] = [];
  const steps = new SampleSteps('run', m.fs, undefined, (level, message) => logs.push(`${level}: ${message}`));
  return { ...m, logs, steps };
}

describe('rollout samples of one step sent by several calls', () => {
  it('two calls sending one step line by line both complete; the one completed last is the step, and it is not left arriving', () => {
    const { steps, files, writes, logs } = setup();
    for (let i = 0; i < 3; i++) steps.take(`${line('a-1', i)}\n${line('b-1', i)}`);
    assert.deepEqual(writes, [FILE, FILE]);
    assert.deepEqual(files.get(FILE), stepOf('b-1'));
    assert.ok(!files.has(`${FILE}.pending`));
    assert.equal(steps.arrivingSteps(), 0);
    assert.deepEqual(steps.held(), []);
    const warned = logs.filter((l) => l.startsWith('warn: rollout_000004.parquet is being recorded by 2 calls at once (a-1, b-1)'));
    assert.equal(warned.length, 1, logs.join('\n'));
  });

  it('a call that stopped mid-step is replaced by a later complete one, says what it left out, and its late lines change nothing', () => {
    const { steps, files, logs } = setup();
    steps.take([line('a-1', 0), line('a-1', 1)].join('\n'));
    assert.equal(steps.arrivingSteps(), 1);
    assert.ok(files.has(`${FILE}.pending`));
    steps.take([0, 1, 2].map((i) => line('b-1', i)).join('\n'));
    assert.deepEqual(files.get(FILE), stepOf('b-1'));
    assert.ok(!files.has(`${FILE}.pending`));
    assert.equal(steps.arrivingSteps(), 0);
    assert.deepEqual(steps.held(), []);
    assert.ok(logs.some((l) => l === 'warn: rollout_000004.parquet: left out the 2 of 3 samples call a-1 had sent, replaced by call b-1, which began after it'), logs.join('\n'));
    steps.take(line('a-1', 2));
    assert.deepEqual(files.get(FILE), stepOf('b-1'));
    assert.equal(steps.arrivingSteps(), 0);
    assert.equal(steps.stepsWritten, 1);
  });

  it('a call that began later stays arriving when an earlier one completes, and replaces it once complete', () => {
    const { steps, files } = setup();
    steps.take([line('a-1', 0), line('b-1', 0), line('a-1', 1), line('a-1', 2)].join('\n'));
    assert.deepEqual(files.get(FILE), stepOf('a-1'));
    assert.ok(files.has(`${FILE}.pending`), 'b-1 is still arriving');
    assert.equal(steps.held().length, 1);
    steps.take([line('b-1', 1), line('b-1', 2)].join('\n'));
    assert.deepEqual(files.get(FILE), stepOf('b-1'));
    assert.ok(!files.has(`${FILE}.pending`));
  });

  it('a line of a call already written, sent again, leaves the step written and not arriving', () => {
    const { steps, files, writes } = setup();
    steps.take([0, 1, 2].map((i) => line('a-1', i)).join('\n'));
    steps.take(line('a-1', 1));
    assert.deepEqual(writes, [FILE]);
    assert.deepEqual(files.get(FILE), stepOf('a-1'));
    assert.ok(!files.has(`${FILE}.pending`));
    assert.equal(steps.arrivingSteps(), 0);
    assert.deepEqual(steps.held(), []);
  });

  it('says when a later call replaces a step already written, and answers a late line of a finished call as left out, not accepted', () => {
    const { steps, logs } = setup();
    steps.take([line('a-1', 0), line('b-1', 0), line('a-1', 1), line('a-1', 2), line('b-1', 1), line('b-1', 2)].join('\n'));
    assert.ok(logs.includes('warn: rollout_000004.parquet: call b-1 replaced the step call a-1 had written'), logs.join('\n'));
    const late = steps.take(`${line('a-1', 1)}\n${line('c-1', 0, 1, 5)}`);
    assert.equal(late.accepted, 1);
    assert.deepEqual(late.problems, [
      { line: 1, field: 'call', message: 'call a-1 of rollout_000004.parquet is over (its step was written, or replaced by a later call); a late or re-sent line of it is left out' },
    ]);
    assert.equal(steps.samplesRejected, 1);
  });

  it('says so when a call changes its count and its earlier lines are left out', () => {
    const { steps, files, logs } = setup();
    steps.take([line('z', 0, 3), line('z', 1, 3), line('z', 0, 2)].join('\n'));
    assert.ok(logs.includes('warn: rollout_000004.parquet: call z sent a line with count 2 after 2 lines with count 3; its earlier 2 samples are left out and the call starts again'), logs.join('\n'));
    steps.take(line('z', 1, 2));
    assert.deepEqual(files.get(FILE), stepOf('z', 2));
  });

  it('the calls that are over, taken back by a new instance (a restart), leave a late line out with the same answer', () => {
    const { steps, files } = setup();
    // one call name holds a newline and a quote (a call is any non-empty string)
    const odd = 'b "1"\nx';
    steps.take([0, 1, 2].map((i) => line('a-1', i)).join('\n'));
    steps.take([0, 1].map((i) => line(odd, i, 2, 6)).join('\n'));
    const before = steps.take(`${line('a-1', 1)}\n${line(odd, 0, 2, 6)}`);
    assert.equal(before.accepted, 0);
    const restarted = setup();
    restarted.steps.restoreOver(steps.overText());
    assert.equal(restarted.steps.overText(), steps.overText());
    const after = restarted.steps.take(`${line('a-1', 1)}\n${line(odd, 0, 2, 6)}`);
    assert.deepEqual(after, before);
    assert.equal(restarted.steps.arrivingSteps(), 0);
    assert.deepEqual(restarted.steps.held(), []);
    assert.deepEqual([...restarted.files.keys()], []);
    assert.ok(files.has(FILE));
    // a damaged line of the entry is skipped, the others count
    const third = setup();
    third.steps.restoreOver(`not json\n42\n${steps.overText()}`);
    assert.equal(third.steps.take(line('a-1', 0)).accepted, 0);
  });

  it('one call re-sending a line (a retry) counts it once', () => {
    const { steps, files } = setup();
    steps.take([line('a-1', 0), line('a-1', 0), line('a-1', 1)].join('\n'));
    assert.ok(!files.has(FILE));
    steps.take(line('a-1', 2));
    assert.deepEqual(files.get(FILE), stepOf('a-1'));
  });
});

describe('rollout samples that cannot be encoded', () => {
  it('a step that fails to encode as a whole while each sample encodes alone is kept and written at the next attempt, not dropped', () => {
    const { fs, files } = memoryFs();
    const logs: string[] = [];
    let failing = true;
    // fails for the step as a whole (as zstd or the step's size can), never for a sample alone
    const encoder = (samples: readonly SampleFields[], zstd?: (input: Uint8Array) => Uint8Array): Uint8Array => {
      if (failing && samples.length === 3) throw new Error('page too large');
      return encodeSampleStep(samples, zstd);
    };
    const steps = new SampleSteps('run', fs, undefined, (level, message) => logs.push(`${level}: ${message}`), encoder);
    const r = steps.take([0, 1, 2].map((i) => line('a', i)).join('\n'));
    assert.equal(r.accepted, 3);
    assert.ok(!files.has(FILE));
    // kept (and so in the write-ahead log), its marker not saying the samples cannot be encoded
    assert.equal(steps.arrivingSteps(), 1);
    assert.equal(steps.held().length, 1);
    assert.equal(steps.samplesRejected, 0);
    assert.equal(steps.writeErrors, 1);
    assert.equal(new TextDecoder().decode(files.get(`${FILE}.pending`)), '');
    assert.ok(logs.includes('error: encoding samples/rollout_000004.parquet failed (page too large); its 3 samples are kept'), logs.join('\n'));
    steps.stop();
    assert.equal(new TextDecoder().decode(files.get(`${FILE}.pending`)), 'its 3 samples arrived, but encoding the step failed (page too large)');
    // written again when a line of the step comes again
    failing = false;
    steps.take(line('a', 2));
    assert.deepEqual(files.get(FILE), stepOf('a'));
    assert.equal(steps.arrivingSteps(), 0);
  });

  it('finds the samples that cannot be encoded by halving the step, not by encoding each sample alone', () => {
    const { fs, files } = memoryFs();
    const logs: string[] = [];
    let encodes = 0;
    const poisoned = (samples: readonly SampleFields[], zstd?: (input: Uint8Array) => Uint8Array): Uint8Array => {
      encodes++;
      if (samples.some((x) => x.poison === true)) throw new Error('cannot encode poison');
      return encodeSampleStep(samples, zstd);
    };
    const steps = new SampleSteps('run', fs, undefined, (level, message) => logs.push(`${level}: ${message}`), poisoned);
    const count = 64;
    const body = Array.from({ length: count }, (_, i) =>
      JSON.stringify({ rollout_id: 4, evaluation: false, call: 'a', count, position: i, sample: { index: i, response: `r${i}`, poison: i === 37 } }),
    ).join('\n');
    assert.equal(steps.take(body).accepted, count);
    // the step, two halves at each of log2(64) levels, and the rest: 14 encodes (one per sample would be 66)
    assert.equal(encodes, 1 + 2 * Math.log2(count) + 1);
    assert.ok(files.has(FILE));
    assert.equal(steps.samplesRejected, 1);
    assert.ok(logs.includes('warn: samples/rollout_000004.parquet: left out 1 of the 64 samples of call a, which could not be encoded: position 37 (cannot encode poison); the rest of the step is written'), logs.join('\n'));
  });
});
