// Search over the real fixtures and the demo: phrases, regular expressions, request and trace ids, sample
// indices and step:sample; results stream while later steps are still being read; the cache makes a restart warm.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Hono } from 'hono';
import { generateDemoRun } from '../src/demo/index.ts';
import { PyFloat, saveTorch } from '../src/formats/torch/writer.ts';
import type { RunSources } from '../src/queries/runAnswers.ts';
import type { StepDiff } from '../src/queries/stepDiff.ts';
import { BadArgument } from '../src/queries/limits.ts';
import { parseQuery, searchRun, type SearchEvent, type SearchMatch } from '../src/queries/search.ts';
import { SearchTexts } from '../src/run/searchTexts.ts';
import { DerivedCache } from '../src/run/derivedCache.ts';
import { mountAnswers, mountRunsAnswers } from '../src/server/answers.ts';
import { failureResponse } from '../src/server/errors.ts';
import { openRun, type OpenRun } from '../src/commands/openRun.ts';
import { openMilesRun } from '../src/run/miles/index.ts';
import { RunAnswers } from '../src/queries/runAnswers.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { ageTree, copyFixtureRun, fixturePath, type RunCopy } from './support/fixtures.ts';

async function all(run: RunSources, q: string, search = new SearchTexts(run)): Promise<SearchEvent[]> {
  const out: SearchEvent[] = [];
  for await (const e of searchRun(search, run, q)) out.push(e);
  return out;
}
/** `inner` with some of its members replaced (a test's watch on what search reads). */
function withMembers(inner: RunSources, members: Partial<RunSources>): RunSources {
  return Object.assign(Object.create(inner) as RunSources, members);
}

/** A run that lists the steps whose texts are read (`eval_N` for eval steps). */
function countingReads(inner: RunSources): { counted: RunSources; reads: string[] } {
  const reads: string[] = [];
  const counted: RunSources = withMembers(inner, {
    sampleTextBatches: (step, evaluation) => (reads.push(`${evaluation ? 'eval_' : ''}${step}`), inner.sampleTextBatches(step, evaluation)),
  });
  return { counted, reads };
}
const matches = (events: SearchEvent[]) => events.filter((e): e is SearchEvent & SearchMatch & { type: 'match' } => e.type === 'match');
const where = (events: SearchEvent[]) => matches(events).map((m) => `${m.evaluation ? 'eval_' : ''}${m.step}:${m.sample_index}:${m.field}`);

test('queries parse into their kinds; bad ones are errors on q', () => {
  assert.deepEqual(parseQuery('3:17'), { kind: 'step_sample', step: 3, sample: 17 });
  assert.deepEqual(parseQuery(' 17 '), { kind: 'sample', sample: 17 });
  const t = parseQuery('lookup "the answer is" toO');
  assert.equal(t.kind, 'text');
  if (t.kind === 'text') {
    assert.deepEqual(t.phrases, ['the answer is']);
    assert.deepEqual(t.words, ['lookup']);
    assert.equal(t.openWord, 'too');
  }
  assert.equal(parseQuery('/a+b/i').kind, 'regex');
  assert.throws(() => parseQuery('/(/'), /q: not a regular expression/);
  // the reason, without the pattern and the flags the search adds
  assert.throws(() => parseQuery('/(unclosed/i'), (e: Error) => e.message === 'q: not a regular expression: Unterminated group');
  assert.throws(() => parseQuery('/a/g'), /unsupported regular-expression flag/);
  assert.throws(() => parseQuery('   '), /the query is empty/);
  // only empty phrases: nothing to look for either
  assert.throws(() => parseQuery('""'), /q: the query is empty/);
  assert.throws(() => parseQuery('"  " "'), /q: the query is empty/);
  // a word or phrase repeated is asked once; more different ones than a search takes are an error on q
  const many = parseQuery(`${'the '.repeat(500)}"a b" "a b" the`);
  assert.ok(many.kind === 'text' && many.words.length === 1 && many.phrases.length === 1 && many.openWord === 'the', JSON.stringify(many));
  const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
  assert.equal(parseQuery(`${words(31)} "x y"`).kind, 'text');
  assert.throws(() => parseQuery(`${words(32)} "x y"`), (e: Error) => e instanceof BadArgument && e.param === 'q' && /33 different words and phrases; a search takes at most 32/.test(e.message));
});


/** A run of one step whose samples 0, 1, … answer `responses` (only what search reads of a run). */
function tinyRun(responses: string[]): RunSources {
  const texts = responses.map((response, i) => ({
    step: 0,
    evaluation: false,
    sample_index: i,
    group_index: 0,
    status: 'completed',
    reward: 1,
    fields: { response },
    ids: [],
  }));
  return {
    name: 'tiny',
    rolloutIds: async () => ({ train: [0], eval: [] }),
    stepStamp: async () => 'fixed',
    async *sampleTextBatches() {
      yield texts;
    },
    readCache: async () => null,
    writeCache: async () => {},
  } as unknown as RunSources;
}

test('a word matches its case-insensitive variants (ſun for sun) the same before and after the index is built', async () => {
  const run = tinyRun(['the ſun rose', 'the sun rose', 'a SUNNY day', 'ſunny ſide']);
  const search = new SearchTexts(run);
  const cold = { whole: where(await all(run, 'sun ', search)), prefix: where(await all(run, 'sun', search)) };
  assert.deepEqual(cold.whole, ['0:0:response', '0:1:response']);
  assert.deepEqual(cold.prefix, ['0:0:response', '0:1:response', '0:2:response', '0:3:response']);
  await search.idle();
  assert.deepEqual({ whole: where(await all(run, 'sun ', search)), prefix: where(await all(run, 'sun', search)) }, cold);
});

test('a bare number is the sample with that index; when no sample has it, the samples whose text holds it, with a note saying so', async () => {
  const run = tinyRun(['the result is 1656', 'boxed{1656}', 'nothing here', 'sample 2 says 16560']);
  const noteOf = (ev: SearchEvent[]) => {
    const done = ev.at(-1)!;
    assert.equal(done.type, 'done');
    return done.type === 'done' ? (done.note ?? null) : null;
  };
  const indexed = await all(run, '2');
  assert.deepEqual(where(indexed), ['0:2:sample_index']);
  assert.equal(noteOf(indexed), null);
  const read = await all(run, '1656');
  assert.deepEqual(where(read), where(await all(run, '"1656"')));
  // as a whole number: 16560 does not hold it
  assert.deepEqual(where(read), ['0:0:response', '0:1:response']);
  assert.equal(noteOf(read), 'no sample has index 1656: the samples whose text holds 1656');
  const done = read.at(-1)!;
  assert.ok(done.type === 'done' && done.matches === 2 && !done.truncated);
});

test('an exact phrase matches whole words at its ends, whatever lies inside it', async () => {
  const run = tinyRun(['firefox jumps high', 'the fox jump, then', 'a fox jumped', 'x: fox  jump']);
  assert.deepEqual(where(await all(run, '"fox jump"')), ['0:1:response']);
  // a phrase that begins or ends with punctuation needs no word edge there
  assert.deepEqual(where(await all(run, '"fox jump,"')), ['0:1:response']);
  assert.deepEqual(where(await all(run, '"x jump"')), []);
});

describe('search over the miles fixture', () => {
  let copy: RunCopy;
  let run: OpenRun;
  before(async () => {
    copy = copyFixtureRun('miles-demo');
    run = await openRun(copy.dir);
  });
  after(async () => {
    await run.close();
    copy.dispose();
  });

  test('an exact phrase finds the one sample that says it, in its recorded conversation', async () => {
    const ev = await all(run, '"answer for sample 33 is"');
    assert.deepEqual(where(ev), ['1:33:conversation']);
    const m = matches(ev)[0];
    assert.equal(m.match, 'answer for sample 33 is');
    const [a, b] = m.highlights[0];
    assert.equal(m.snippet.slice(a, b), 'answer for sample 33 is');
    assert.equal(m.reward, 1);
    assert.equal(m.status, 'completed');
  });

  test('a regular expression matches across steps, case as written', async () => {
    const ev = await all(run, '/answer for sample 6[4-5]/');
    assert.deepEqual(where(ev), ['2:64:conversation', '2:65:conversation']);
    assert.deepEqual(where(await all(run, '/ANSWER FOR SAMPLE 64/')), []);
    assert.deepEqual(where(await all(run, '/ANSWER FOR SAMPLE 64/i')), ['2:64:conversation']);
  });

  test('words must all occur, whole, anywhere in the sample; the last may be a prefix while typing', async () => {
    const both = where(await all(run, 'lookup 42 '));
    assert.equal(both.length, 6, 'the six samples with a recorded conversation');
    assert.deepEqual(where(await all(run, 'looku ')), [], 'a complete word matches whole words only');
    assert.equal(where(await all(run, 'looku')).length, 6, 'the word being typed matches as a prefix');
  });

  test('step:sample and a sample index open that sample', async () => {
    assert.deepEqual(where(await all(run, '2:70')), ['2:70:sample_index']);
    assert.deepEqual(where(await all(run, '33')), ['1:33:sample_index']);
    assert.deepEqual(where(await all(run, '0:70')), [], 'sample 70 is not in step 0');
  });

  test('progress follows every step and done closes the answer', async () => {
    const ev = await all(run, 'nothing-like-this-anywhere');
    assert.deepEqual(
      ev.filter((e) => e.type === 'progress').map((e) => (e.type === 'progress' ? `${e.evaluation ? 'eval_' : ''}${e.step}` : '')),
      ['0', '1', '2', 'eval_0'],
    );
    const done = ev.at(-1)!;
    assert.equal(done.type, 'done');
    if (done.type === 'done') assert.deepEqual([done.matches, done.truncated, done.steps_scanned, done.steps_total], [0, false, 4, 4]);
  });
});

test('a damaged step is skipped and named in done.warnings: the steps after it are still searched', async () => {
  const copy = copyFixtureRun('miles-demo');
  const dump = join(copy.dir, 'rollout_data', '1.pt');
  truncateSync(dump, Math.floor(statSync(dump).size / 2));
  ageTree(copy.dir);
  const run = await openRun(copy.dir);
  try {
    const ev = await all(run, '/answer for sample (33|64)\\b/');
    assert.deepEqual(where(ev), ['2:64:conversation'], 'step 2 is searched after the damaged step 1');
    const done = ev.at(-1)!;
    assert.equal(done.type, 'done');
    if (done.type === 'done') {
      assert.equal(done.steps_scanned, 4);
      assert.equal(done.warnings.length, 1);
      assert.match(done.warnings[0], /^step 1: .*rollout_data\/1\.pt: truncated archive/);
    }
    // over HTTP the file is named relative to the run
    const app = new Hono();
    app.onError((err, c) => failureResponse(c, err, [copy.dir]));
    mountAnswers(app, run, { roots: [copy.dir] });
    const res = await app.fetch(new Request('http://127.0.0.1/api/rlsight/search?q=%2Fanswer%20for%20sample%2064%2F'));
    const last = JSON.parse((await res.text()).trim().split('\n').at(-1)!) as SearchEvent;
    assert.ok(last.type === 'done' && last.warnings[0].startsWith('step 1: rollout_data/1.pt: truncated archive'), JSON.stringify(last));
  } finally {
    await run.close();
    copy.dispose();
  }
});

describe('search over the slime trace fixture', () => {
  let copy: RunCopy;
  let run: OpenRun;
  before(async () => {
    // The slime fixture is the rollout_data folder of a run.
    const base = mkdtempSync(join(tmpdir(), 'rlsight-slime-'));
    cpSync(fixturePath('slime-trace', 'rollout_data'), join(base, 'run', 'rollout_data'), { recursive: true });
    ageTree(join(base, 'run'));
    copy = { dir: join(base, 'run'), dispose: () => rmSync(base, { recursive: true, force: true }) };
    run = await openRun(copy.dir);
  });
  after(async () => {
    await run.close();
    copy.dispose();
  });

  test('a trace id and an sglang request id name their sample', async () => {
    assert.deepEqual(where(await all(run, '3c901ac5299d436fb101f7645d99e078')), ['0:0:id']);
    assert.deepEqual(where(await all(run, 'f0bf7edf828c2bdd3e832223d43a0dcd')), ['0:0:id']);
  });

  test('a step is read once per search state, and again once its dump changes', async () => {
    const { counted, reads } = countingReads(run);
    const search = new SearchTexts(counted, false);
    const first = where(await all(counted, '"Natalia sold clips"', search));
    assert.deepEqual(reads, ['0', '1', 'eval_0']);
    assert.deepEqual(where(await all(counted, '"Natalia sold clips"', search)), first);
    assert.deepEqual(reads, ['0', '1', 'eval_0'], 'a second search reads nothing again');
    // Step 1's dump is replaced (same name, other content): only it is read again, and its new text is found.
    const dump = join(copy.dir, 'rollout_data', '1.pt');
    await saveTorch({ rollout_id: 1, samples: [{ index: 0, group_index: 0, prompt: 'a replaced dump', response: 'zebra crossing', status: 'completed', reward: new PyFloat(1) }] }, dump);
    const old = Date.now() / 1000 - 7200;
    utimesSync(dump, old, old);
    assert.deepEqual(where(await all(counted, 'zebra crossing ', search)), ['1:0:response']);
    assert.deepEqual(reads, ['0', '1', 'eval_0', '1']);
  });

  test('a prompt phrase finds every sample of its group', async () => {
    const found = where(await all(run, '"Natalia sold clips"'));
    assert.ok(found.length >= 4, found.join(' '));
    assert.ok(found.every((w) => w.endsWith(':prompt')));
  });
});

describe('search over the demo', () => {
  let base: string;
  let cache: string;
  let run: OpenRun;
  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'rlsight-search-demo-'));
    cache = join(base, 'cache');
    await generateDemoRun(join(base, 'run'), { steps: 3, seed: 3 });
    run = await openRun(join(base, 'run'), { cacheDir: cache });
  });
  after(async () => {
    await run.close();
    rmSync(base, { recursive: true, force: true });
  });

  test('the phrase of one response finds it, and the index built after the scan answers the same', async () => {
    const search = new SearchTexts(run, true, new DerivedCache(cache));
    const texts = await run.sampleTexts(1, false);
    const target = texts[7];
    // The tool call the response makes (its code is specific to the prompt).
    const code = /"code":"([^"]+)"/.exec(target.fields.response!)?.[1];
    assert.ok(code, 'the sample calls the python tool');
    const phrase = `"${code}"`;
    const cold = where(await all(run, phrase, search));
    assert.ok(cold.includes(`1:${target.sample_index}:response`), cold.join(' '));
    assert.ok(matches(await all(run, phrase, search)).every((m) => m.step !== 1 || m.group_index === target.group_index));
    await search.idle();
    assert.ok(readdirSync(cache).some((f) => f.startsWith('search_')), 'the indexed steps are cached');
    assert.deepEqual(where(await all(run, phrase, search)), cold, 'warm (indexed) answers equal cold ones');
    // A new search state over the same run reads the cache: same answer.
    assert.deepEqual(where(await all(run, phrase, new SearchTexts(run, true, new DerivedCache(cache)))), cold);
  });

  test('a regular expression scans a step a slice at a time, the event loop served between slices', async () => {
    const search = new SearchTexts(run);
    await all(run, '/a/', search);
    const samples = (await run.sampleTexts(0, false)).length;
    assert.ok(samples > 64, `${samples} samples a step`);
    // every sample matches; a callback queued at the first match runs after the first slice, not after the step
    let seen = 0;
    let servedAt = -1;
    for await (const e of searchRun(search, run, '/./', { limit: 1000 })) {
      if (e.type !== 'match') continue;
      if (++seen === 1) setImmediate(() => (servedAt = seen));
    }
    assert.ok(servedAt > 0 && servedAt < samples, `served after ${servedAt} of the first step's ${samples} matches`);
  });

  test('cached steps are read from the cache until their dump changes', async () => {
    const { counted, reads } = countingReads(run);
    const first = new SearchTexts(counted, true, new DerivedCache(cache));
    const before = where(await all(counted, '/a/', first));
    await first.idle();
    reads.length = 0;
    assert.deepEqual(where(await all(counted, '/a/', new SearchTexts(counted, true, new DerivedCache(cache)))), before);
    assert.deepEqual(reads, [], 'every step came from the cache');
    const dump = join(base, 'run', 'rollout_data', '1.pt');
    const old = Date.now() / 1000 - 7200;
    utimesSync(dump, old, old);
    assert.deepEqual(where(await all(counted, '/a/', new SearchTexts(counted, true, new DerivedCache(cache)))), before);
    assert.deepEqual(reads, ['1'], 'only the changed step is read again');
  });

  test('limit stops the scan with truncated set', async () => {
    const out: SearchEvent[] = [];
    for await (const e of searchRun(new SearchTexts(run), run, '/a/', { limit: 5 })) out.push(e);
    assert.equal(matches(out).length, 5);
    const done = out.at(-1)!;
    assert.ok(done.type === 'done' && done.truncated);
  });
});

describe('a cold step is searched while its dump is decoded', () => {
  let base: string;
  let run: OpenRun;
  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'rlsight-search-stream-'));
    const dir = join(base, 'run');
    mkdirSync(join(dir, 'rollout_data'), { recursive: true });
    mkdirSync(join(dir, 'dashboard'));
    const samples = Array.from({ length: 600 }, (_, i) => ({
      index: i,
      group_index: i >> 3,
      prompt: [{ role: 'user', content: `Problem ${i >> 3}: add ${i} and ${i + 1}` }],
      response: `${i === 3 || i === 450 ? 'a zebra crossing here, ' : ''}${'some words of the answer '.repeat(12)}${i}`,
      reward: new PyFloat(i % 2),
      status: 'completed',
      metadata: { sglang_request_id: `req-${String(i).padStart(8, '0')}` },
    }));
    await saveTorch({ rollout_id: 0, metadata: {}, samples }, join(dir, 'rollout_data', '0.pt'));
    ageTree(dir);
    // Small slices of decoding, so the step is handed out in many batches.
    run = new RunAnswers(await openMilesRun(dir, { reader: { textSliceOpcodes: 200 } }));
  });
  after(async () => {
    await run.close();
    rmSync(base, { recursive: true, force: true });
  });

  test('its first match arrives before the rest of the dump is read, and every answer equals the whole step’s', async () => {
    const inner = run;
    let finished = false;
    let batches = 0;
    const watched: RunSources = withMembers(inner, {
      async *sampleTextBatches(step, evaluation) {
        for await (const batch of inner.sampleTextBatches(step, evaluation)) {
          batches++;
          yield batch;
        }
        finished = true;
      },
    });
    // The same run with each step handed out whole.
    const whole: RunSources = withMembers(inner, {
      async *sampleTextBatches(step, evaluation) {
        yield await inner.sampleTexts(step, evaluation);
      },
    });
    let finishedAtFirstMatch: boolean | null = null;
    const streamed: SearchEvent[] = [];
    for await (const e of searchRun(new SearchTexts(watched, false), watched, '"zebra crossing"')) {
      if (e.type === 'match') finishedAtFirstMatch ??= finished;
      streamed.push(e);
    }
    assert.equal(finishedAtFirstMatch, false, 'the first match came while the dump was still being decoded');
    assert.ok(batches > 10, `${batches} batches`);
    const answer = (events: SearchEvent[]) => events.map((e) => (e.type === 'done' ? { ...e, elapsed_ms: 0 } : e));
    assert.deepEqual(where(streamed), ['0:3:response', '0:450:response']);
    assert.deepEqual(answer(streamed), answer(await all(whole, '"zebra crossing"')));
    for (const q of ['zebra', 'zebra cross', 'req-00000450', '/zebra\\s+cr/', '0:450', '7', 'answer 599 ']) {
      assert.deepEqual(answer(await all(inner, q)), answer(await all(whole, q)), q);
    }
    assert.deepEqual(where(await all(inner, 'req-00000450')), ['0:450:id']);
  });
});

describe('rlsight search', () => {
  let copy: RunCopy;
  before(() => {
    ensureCliBuilt();
    copy = copyFixtureRun('miles-demo');
  });
  after(() => copy.dispose());
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, [RLSIGHT_BIN, 'search', '--dump-details', copy.dir, ...args], { encoding: 'utf8' });
    return { code: r.status, lines: r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>), stderr: r.stderr };
  };

  test('prints one JSON line per match, stops at --limit, exits 1 without a match and 2 on a bad query', () => {
    const phrase = cli('"answer for sample 33 is"');
    assert.equal(phrase.code, 0, phrase.stderr);
    assert.deepEqual(
      phrase.lines.map((l) => [l.step, l.evaluation, l.sample_index, l.field]),
      [[1, false, 33, 'conversation']],
    );
    assert.match(String(phrase.lines[0].snippet), /answer for sample 33 is/);
    const limited = cli('/a/', '--limit', '3');
    assert.equal(limited.code, 0);
    assert.equal(limited.lines.length, 3);
    assert.match(limited.stderr, /stopped at --limit 3 matches/);
    assert.equal(cli('nothing-like-this-anywhere').code, 1);
    // the query is given whole: its last word matches whole words, not as a prefix being typed
    assert.ok(cli('answer').lines.length > 0);
    assert.equal(cli('answe').code, 1);
    const bad = cli('/(/');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /QUERY: not a regular expression/);
    // a regular expression stopped during the scan is the command's QUERY too, not the API's q
    const runaway = cli('/(.+)+#/');
    assert.equal(runaway.code, 2, runaway.stderr);
    assert.match(runaway.stderr, /^rlsight: QUERY: the regular expression took over/m);
  });
});

describe('GET /api/rlsight/search', () => {
  let copy: RunCopy;
  let run: OpenRun;
  let release!: () => void;
  let app: Hono;
  before(async () => {
    copy = copyFixtureRun('miles-demo');
    run = await openRun(copy.dir);
    const gate = new Promise<void>((r) => (release = r));
    const inner = run;
    // Step 2's texts are held back until the test has read a match from step 0: the answer streams.
    const held: RunSources = withMembers(inner, {
      async *sampleTextBatches(step, evaluation) {
        if (step === 2) await gate;
        yield* inner.sampleTextBatches(step, evaluation);
      },
    });
    app = new Hono();
    app.onError((err, c) => failureResponse(c, err, [copy.dir]));
    mountAnswers(app, held, { roots: [copy.dir] });
  });
  after(async () => {
    release();
    await run.close();
    copy.dispose();
  });

  test('matches arrive while later steps are still being read', async () => {
    const res = await app.fetch(new Request('http://127.0.0.1/api/rlsight/search?q=lookup'));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /application\/x-ndjson/);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"type":"match"')) {
      const { value, done } = await reader.read();
      assert.ok(!done, 'the stream does not end before a match');
      text += decoder.decode(value, { stream: true });
    }
    assert.ok(!text.includes('"type":"done"'), 'a match arrived while step 2 was still held back');
    release();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    const events = text.trim().split('\n').map((l) => JSON.parse(l) as SearchEvent);
    assert.equal(events.at(-1)!.type, 'done');
    assert.deepEqual([...new Set(matches(events).map((m) => m.step))], [0, 1, 2]);
  });

  test('a regular expression that backtracks without bound is stopped, and the server answers the next search', { timeout: 60_000 }, async () => {
    release();
    // (.+)+# tries every split of a text without '#': 2^n steps for n characters.
    const res = await app.fetch(new Request(`http://127.0.0.1/api/rlsight/search?q=${encodeURIComponent('/(.+)+#/')}`));
    assert.equal(res.status, 200);
    const events = (await res.text()).trim().split('\n').map((l) => JSON.parse(l) as { type: string; detail?: string });
    const last = events.at(-1)!;
    assert.equal(last.type, 'error');
    assert.match(last.detail!, /^q: the regular expression took over 0\.25 s on \d+ samples? and was stopped/);
    const next = await app.fetch(new Request('http://127.0.0.1/api/rlsight/search?q=%2Fanswer%20for%20sample%2033%2F'));
    assert.deepEqual(matches((await next.text()).trim().split('\n').map((l) => JSON.parse(l) as SearchEvent)).map((m) => m.sample_index), [33]);
  });

  test('bad queries are 400s naming q or limit', async () => {
    for (const [url, param] of [
      ['/api/rlsight/search?q=/(/', 'q'],
      ['/api/rlsight/search', 'q'],
      ['/api/rlsight/search?q=x&limit=0', 'limit'],
      ['/api/rlsight/search?q=x&limit=many', 'limit'],
    ]) {
      const res = await app.fetch(new Request(`http://127.0.0.1${url}`));
      assert.equal(res.status, 400, url);
      assert.match(((await res.json()) as { detail: string }).detail, new RegExp(`^${param}`), url);
    }
  });
});


describe('answers across the runs a server holds', () => {
  let one: RunCopy;
  let two: RunCopy;
  let runs: OpenRun[];
  let app: Hono;
  before(async () => {
    one = copyFixtureRun('miles-demo');
    two = copyFixtureRun('miles-demo');
    runs = [await openRun(one.dir), await openRun(two.dir)];
    app = new Hono();
    app.onError((err, c) => failureResponse(c, err, [one.dir, two.dir]));
    mountRunsAnswers(app, () => [
      { id: 'first', answers: runs[0], roots: [one.dir] },
      { id: 'second', answers: runs[1], roots: [two.dir] },
    ]);
  });
  after(async () => {
    for (const r of runs) await r.close();
    one.dispose();
    two.dispose();
  });
  const get = async (url: string) => app.fetch(new Request(`http://127.0.0.1${url}`));
  const events = async (url: string) => (await (await get(url)).text()).trim().split('\n').map((l) => JSON.parse(l) as SearchEvent);

  test('a pattern that is no regular expression is a 400 giving the reason whole', async () => {
    const r = await get(`/api/rlsight/search?q=${encodeURIComponent('/[/')}`);
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { detail: string }).detail, 'q: not a regular expression: Unterminated character class');
  });

  test('a run named twice in runs= is a 400, not every match twice', async () => {
    const r = await get('/api/rlsight/search?q=answer&runs=first,second,first');
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { detail: string }).detail, 'runs: "first" is named twice');
  });

  test('search names each match’s run with runs=all, and stays on the first run without it', async () => {
    const all = matches(await events('/api/rlsight/search?q=%22sample%2033%20is%22&runs=all'));
    assert.deepEqual(all.map((m) => `${m.run}:${m.step}:${m.sample_index}`), ['first:1:33', 'second:1:33']);
    const first = matches(await events('/api/rlsight/search?q=%22sample%2033%20is%22'));
    assert.deepEqual(first.map((m) => [m.run, m.sample_index]), [[undefined, 33]]);
    const res = await get('/api/rlsight/search?q=x&runs=first,nope');
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { detail: string }).detail, /^runs: no run named "nope"/);
  });

  test('a step diff across runs: the same step of two identical runs differs in nothing', async () => {
    const res = await get('/api/rlsight/diff/steps?a=1&b=1&run_a=first&run_b=second');
    assert.equal(res.status, 200);
    const d = (await res.json()) as StepDiff;
    assert.deepEqual([d.a.run, d.b.run], ['first', 'second']);
    assert.deepEqual(d.flipped, []);
    assert.ok(d.distributions.every((x) => x.delta_mean === null || x.delta_mean === 0));
    assert.ok(d.moved.every((m) => m.a.sample_index === m.b.sample_index && m.delta_reward === 0));
    assert.equal((await get('/api/rlsight/diff/steps?a=1&b=1&run_b=nope')).status, 400);
  });
});
