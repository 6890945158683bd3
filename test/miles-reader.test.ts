// The miles dump reader against the miles-demo goldens, through the queries that assemble its records:
// every summary, groups, tokens, messages and dump/* answer, and what each read decodes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ageTree, copyFixtureRun, diffJson, loadGoldens, type Golden, type RunCopy } from './support/fixtures.ts';
import { parquetWriteBuffer } from 'hyparquet-writer';
import * as z from 'zod';
import { dumpMetricSeries } from '../src/queries/metrics.ts';
import { DumpStillWriting, NotFound, RefusedOption } from '../src/run/errors.ts';
import { BadArgument } from '../src/queries/limits.ts';
import type { DumpReaderOptions } from '../src/run/miles/reader.ts';
import { boolParam, intParam, parseParams } from '../src/server/params.ts';
import { openAnswers, type Answers } from './support/answers.ts';
import { foreground } from '../src/run/foreground.ts';
import { loadTorch } from '../src/formats/torch/load.ts';
import { saveTorch } from '../src/formats/torch/writer.ts';
import { PyObject } from '../src/formats/torch/value.ts';

const openReader = openAnswers;
type Reader = Answers;

/** Records the run-relative name of every dump file decoded. */
const recording = (opened: string[]) => (file: string) => void opened.push(file);

const rolloutParams = z.object({
  rollout_id: intParam,
  sample_index: intParam.optional(),
  eval: boolParam.default(false),
  start: intParam.default(0),
  end: intParam.optional(),
});

/** Replays one golden request against the reader, parsing its parameters as the server does. */
async function answer(reader: Reader, request: string): Promise<unknown> {
  const url = new URL(request, 'http://x');
  const parts = url.pathname.split('/').slice(3); // after /api/rollout
  const q = parseParams(rolloutParams, { ...Object.fromEntries(url.searchParams), rollout_id: parts[0], sample_index: parts[2] });
  if (parts[1] === 'summary') return reader.summary(q.rollout_id, q.eval);
  if (parts[1] === 'groups') return reader.groups(q.rollout_id, q.eval);
  const idx = q.sample_index!;
  if (parts[3] === 'messages') return reader.messages(q.rollout_id, idx, q.eval);
  return reader.tokens(q.rollout_id, idx, { start: q.start, end: q.end ?? null, evaluation: q.eval });
}

function snapshot(dir: string): string {
  const lines: string[] = [];
  const walk = (p: string): void => {
    for (const name of readdirSync(p).sort()) {
      const full = join(p, name);
      const st = statSync(full);
      if (st.isDirectory()) walk(full);
      else lines.push(`${full.slice(dir.length)} ${st.size} ${st.mtimeMs} ${readFileSync(full).toString('base64').length}`);
    }
    lines.push(`${p.slice(dir.length)}/ ${statSync(p).mtimeMs}`);
  };
  walk(dir);
  return lines.join('\n');
}

const ROLLOUT_REQUEST = /^\/api\/rollout\/[^/]+\/(summary|groups|sample\/[^/]+\/(messages|tokens))(\?|$)/;

describe('DumpReader over the miles-demo run', () => {
  let run: RunCopy;
  let cacheBase: string;
  let before_: string;
  const goldens = loadGoldens().filter((g) => ROLLOUT_REQUEST.test(g.request));

  before(() => {
    run = copyFixtureRun();
    cacheBase = mkdtempSync(join(tmpdir(), 'rlsight-cache-'));
    before_ = snapshot(run.dir);
  });
  after(() => {
    run.dispose();
    rmSync(cacheBase, { recursive: true, force: true });
  });

  const open = (opts: DumpReaderOptions = {}) => openReader(run.dir, opts);

  it('covers every summary, groups, tokens and messages golden', () => {
    assert.equal(goldens.length, 95, 'the miles-demo fixture has 95 such answers');
  });

  for (const variant of ['fresh reader', 'disk cache', 'worker decode']) {
    it(`answers every rollout golden (${variant})`, async () => {
      const reader = await open(
        variant === 'disk cache' ? { cacheDir: join(cacheBase, 'c') } : variant === 'worker decode' ? { decodeOffThreadAbove: 0 } : {},
      );
      // The second variant runs twice over the same cache dir: once filling it, once reading it.
      const passes = variant === 'disk cache' ? 2 : 1;
      for (let pass = 0; pass < passes; pass++) {
        if (pass > 0) await reader.close();
        const r = pass === 0 ? reader : await open({ cacheDir: join(cacheBase, 'c') });
        for (const g of goldens) await check(r, g);
      }
    });
  }

  it('a filled summary cache answers summaries and groups without opening a dump; a touched dump is read again', async () => {
    const cacheDir = join(cacheBase, 'reuse');
    const summaries = goldens.filter((g) => g.status === 200 && /\/(summary|groups)(\?|$)/.test(g.request));
    assert.ok(summaries.length > 4);
    const filler = await open({ cacheDir });
    for (const g of summaries) await check(filler, g);
    // its steps are kept once it is closed (written after the answers, not before them)
    await filler.close();
    const opened: string[] = [];
    const reader = await open({ cacheDir, onDecode: recording(opened) });
    for (const g of summaries) await check(reader, g);
    assert.equal(opened.length, 0, `answered from the cache, yet opened ${opened}`);
    const dump = join(run.dir, 'rollout_data', '0.pt');
    const original = statSync(dump);
    utimesSync(dump, original.atime, new Date(original.mtimeMs - 3600_000));
    try {
      const again = await open({ cacheDir, onDecode: recording(opened) });
      await again.summary(0, false);
      assert.ok(opened.includes('rollout_data/0.pt'), `a changed source invalidates its step: opened ${opened}`);
    } finally {
      utimesSync(dump, original.atime, original.mtime);
    }
  });

  it('keeps a step in the cache directory once its answer is out, never before it', async () => {
    const cacheDir = join(cacheBase, 'after-answer');
    const kept = (): string[] => {
      try {
        return readdirSync(cacheDir, { recursive: true }).map(String).filter((p) => p.endsWith('.step.json'));
      } catch {
        return [];
      }
    };
    const reader = await open({ cacheDir });
    // a request is being answered (the server marks each one): the step's megabyte of JSON waits for it
    const answered = foreground.begin();
    try {
      const summary = await reader.summary(0);
      assert.ok(summary.rows.length > 0);
      assert.deepEqual(kept(), [], 'written before the answer was out');
    } finally {
      answered();
    }
    await reader.close();
    assert.equal(kept().length, 1, 'written once no request was being answered');
    const opened: string[] = [];
    const again = await open({ cacheDir, onDecode: recording(opened) });
    await again.summary(0);
    assert.deepEqual(opened, [], 'the next reader answers from it');
  });

  async function check(reader: Reader, g: Golden): Promise<void> {
    if (g.status === 200) {
      const got = await answer(reader, g.request);
      const d = diffJson(JSON.parse(JSON.stringify(got)), g.body);
      assert.equal(d, null, `${g.file} ${g.request}: ${d}`);
      return;
    }
    // The reference's 422s are parameters that do not parse; its 400s are arguments the reader or a query refuses.
    const expected = g.status === 404 ? [NotFound] : [BadArgument, RefusedOption];
    await assert.rejects(answer(reader, g.request), (e: unknown) => {
      assert.ok(expected.some((c) => e instanceof c), `${g.file} ${g.request}: expected ${expected.map((c) => c.name).join(' or ')}, got ${String(e)}`);
      assert.ok(!(e as Error).message.includes(run.dir), `${g.file}: detail leaks the run path: ${(e as Error).message}`);
      return true;
    });
  }

  it('serves the dump/* metric goldens from stepAggregates', async () => {
    const reader = await open();
    const aggregates = await reader.stepAggregates();
    assert.deepEqual(aggregates.map((a) => a.rollout_id), [0, 1, 2]);
    let compared = 0;
    for (const g of loadGoldens().filter((x) => x.request.startsWith('/api/metrics?'))) {
      const keys = new URL(g.request, 'http://x').searchParams.get('keys')?.split(',').filter((k) => k.startsWith('dump/')) ?? [];
      if (keys.length === 0) continue;
      if (g.status === 400) {
        assert.throws(() => dumpMetricSeries(aggregates, keys), BadArgument, g.file);
        compared++;
        continue;
      }
      if (g.status !== 200) continue;
      for (const k of keys) {
        const d = diffJson(dumpMetricSeries(aggregates, [k])[k], g.body[k]);
        assert.equal(d, null, `${g.file} ${k}: ${d}`);
        compared++;
      }
    }
    assert.ok(compared >= 11, `compared ${compared}`);
  });

  it('lists the visible rollout ids', async () => {
    const reader = await open();
    assert.deepEqual(await reader.rolloutIds(), { train: [0, 1, 2], eval: [0] });
  });

  it('reads tokens from the parquet mirror, decoding neither the rollout dump nor unrelated rank files', async () => {
    for (const g of goldens.filter((x) => x.status === 200 && /\/sample\/\d+\/tokens$/.test(x.request))) {
      const opened: string[] = [];
      const reader = await openReader(run.dir, { onDecode: recording(opened) });
      const d = diffJson(JSON.parse(JSON.stringify(await answer(reader, g.request))), g.body);
      assert.equal(d, null, `${g.file}: ${d}`);
      assert.deepEqual(opened.filter((p) => p.startsWith('rollout_data')), [], g.file);
      if (!g.request.includes('eval')) {
        // Ranks 2k+1 are byte-identical TP copies of ranks 2k: they are never decoded.
        assert.ok(opened.length >= 1 && opened.every((p) => /_[02]\.pt$/.test(p)), `${g.file} opened ${opened}`);
      }
    }
  });

  it('never writes inside the run directory', () => {
    assert.equal(snapshot(run.dir), before_);
  });

  it('refuses a cache directory inside the run', async () => {
    await assert.rejects(openReader(run.dir, { cacheDir: join(run.dir, 'dashboard', 'cache') }), RefusedOption);
  });
});

describe('a step previewed while its train side is joined', () => {
  it('shows its samples as soon as they are decoded, train columns pending, and the summary once the step is read', async () => {
    const run = copyFixtureRun();
    try {
      const whole = await (await openReader(run.dir)).summary(1);
      // the rank files' join is held up on this thread while the rollout dump decodes on a worker
      const slowTrain = (file: string) => {
        if (!file.startsWith('train_data/')) return;
        const until = performance.now() + 400;
        while (performance.now() < until);
      };
      const reader = await openReader(run.dir, { decodeOffThreadAbove: 0, onDecode: slowTrain });
      const [preview, summary] = await Promise.all([reader.summaryPreview(1), reader.summary(1)]);
      assert.deepEqual(summary, whole);
      assert.equal(preview.train_pending, true, 'the preview came before the train side');
      // the train columns wait for the train side: empty in the preview, filled in the summary
      for (const c of ['mean_entropy', 'adv_mean', 'mean_abs_lp_diff']) {
        assert.ok(preview.rows.every((r) => r[c] === null) && whole.rows.some((r) => r[c] !== null), c);
      }
      // every rollout-side column is the summary's, row for row
      const rolloutSide = ['sample_index', 'group_index', 'status', 'reward', 'response_length', 'total_length', 'weight_version', 'staleness'];
      assert.deepEqual(
        preview.rows.map((r) => rolloutSide.map((c) => r[c])),
        whole.rows.map((r) => rolloutSide.map((c) => r[c])),
      );
      // asked again once the step is read, the preview is the summary
      assert.deepEqual(await reader.summaryPreview(1), whole);
    } finally {
      run.dispose();
    }
  });
});

describe("a step's first samples", () => {
  it("come ahead of the rest of its dump, as whole groups in batch order, each row the summary's", async () => {
    const run = copyFixtureRun();
    try {
      const whole = await (await openReader(run.dir)).summary(1);
      const reader = await openReader(run.dir, { decodeOffThreadAbove: 0, previewFirstSamples: 6, textSliceOpcodes: 50 });
      const [first, rest] = await Promise.all([reader.summaryPreview(1, false, true), reader.summaryPreview(1)]);
      assert.equal(first.first_samples, true);
      assert.equal(first.train_pending, true);
      // six asked, but the sixth and seventh are of a group the dump has not finished: the first group alone
      assert.deepEqual(
        first.rows.map((r) => r.group_index),
        [0, 0, 0, 0],
      );
      const rolloutSide = ['sample_index', 'group_index', 'status', 'reward', 'response_length', 'total_length', 'weight_version', 'staleness'];
      const sideOf = (rows: typeof whole.rows) => rows.map((r) => rolloutSide.map((c) => r[c]));
      assert.deepEqual(sideOf(first.rows), sideOf(whole.rows.slice(0, 4)));
      assert.equal(rest.first_samples, undefined, 'a preview not asked for the first samples waits for all of them');
      assert.deepEqual(sideOf(rest.rows), sideOf(whole.rows));
      // once the step is read, the first samples are the summary
      assert.deepEqual(await reader.summaryPreview(1, false, true), whole);
    } finally {
      run.dispose();
    }
  });

  it('are not handed out ahead when none are asked for', async () => {
    const run = copyFixtureRun();
    try {
      const reader = await openReader(run.dir, { decodeOffThreadAbove: 0, previewFirstSamples: 0, textSliceOpcodes: 50 });
      const preview = await reader.summaryPreview(1, false, true);
      assert.equal(preview.first_samples, undefined);
      assert.equal(preview.rows.length, 32);
    } finally {
      run.dispose();
    }
  });
});

describe('a step whose preview someone waits for', () => {
  it('decodes its rollout dump alone first: no rank file is joined before the preview is out', async () => {
    const run = copyFixtureRun();
    try {
      let previewOut = false;
      const trainBeforePreview: string[] = [];
      const reader = await openReader(run.dir, {
        decodeOffThreadAbove: 0,
        onDecode: (file) => {
          if (file.startsWith('train_data/') && !previewOut) trainBeforePreview.push(file);
        },
      });
      const previewP = reader.summaryPreview(1).then((p) => ((previewOut = true), p));
      const [preview, summary] = await Promise.all([previewP, reader.summary(1)]);
      assert.deepEqual(trainBeforePreview, []);
      assert.equal(preview.train_pending, true);
      assert.ok(summary.rows.some((r) => r.mean_entropy !== null), 'the train side is joined after it');
    } finally {
      run.dispose();
    }
  });
});

describe('a decode worker started ahead of the first step read', () => {
  it('is handed that read and gives the same step; a closed reader starts none', async () => {
    const run = copyFixtureRun();
    const { DumpReader } = await import('../src/run/miles/reader.ts');
    try {
      const whole = await (await DumpReader.open(run.dir)).step(1);
      const reader = await DumpReader.open(run.dir, { decodeOffThreadAbove: 0 });
      await reader.prepareDecodeWorker();
      assert.equal(reader.decodeWorkerWaiting, true, 'one waits');
      const step = await reader.step(1);
      assert.deepEqual(step.samples, whole.samples);
      assert.deepEqual([...step.digests], [...whole.digests]);
      assert.equal(reader.decodeWorkerWaiting, false, 'the read took it');
      await reader.prepareDecodeWorker();
      assert.equal(reader.decodeWorkerWaiting, false, 'only one is ever started');
      const closed = await DumpReader.open(run.dir, { decodeOffThreadAbove: 0 });
      await closed.close();
      await closed.prepareDecodeWorker();
      assert.equal(closed.decodeWorkerWaiting, false);
    } finally {
      run.dispose();
    }
  });
});

describe('a spare decode worker reading a step catalog for a token read', () => {
  /** A rollout reader over a copy of the fixture run, and step 1's rank file names; `use` runs before the copy goes. */
  async function withRollouts(use: (rollouts: import('../src/run/miles/rolloutReader.ts').RolloutDumpReader, dir: string, names: string[]) => Promise<void>): Promise<void> {
    const run = copyFixtureRun();
    const { RolloutDumpReader } = await import('../src/run/miles/rolloutReader.ts');
    const { DumpFiles } = await import('../src/run/miles/dumpFiles.ts');
    try {
      const rollouts = new RolloutDumpReader(new DumpFiles(run.dir, run.dir, null, () => {}, Date.now), 0, undefined, 0);
      await use(rollouts, run.dir, readdirSync(join(run.dir, 'train_data')).filter((n) => n.startsWith('1_')));
      rollouts.clear();
    } finally {
      run.dispose();
    }
  }

  /** Step 1's dump decoded by the worker the spare became equals the dump decoded here. */
  async function decodesStep(rollouts: import('../src/run/miles/rolloutReader.ts').RolloutDumpReader, before?: () => Promise<void>): Promise<void> {
    const worker = (await rollouts.decodeWorker('rollout_data/1.pt', 1, false))!;
    try {
      await before?.();
      assert.deepEqual((await worker.dump)!.samples, (await rollouts.load(1, false)).samples);
    } finally {
      worker.close();
    }
  }

  it("reads every rank file's directory as this thread would, then stays ready for its step", () =>
    withRollouts(async (rollouts, dir, names) => {
      const { storageCatalogOf } = await import('../src/run/miles/trainStep.ts');
      assert.equal(rollouts.catalogHelper(['x'], [false]), null, 'none without a spare');
      await rollouts.prepareWorker(1, false);
      const paths = names.map((n) => join(dir, 'train_data', n));
      const read = await rollouts.catalogHelper(paths, paths.map(() => true))!.finished;
      const scratch = { bytes: new Uint8Array(0), print: new Uint8Array(1) };
      assert.deepEqual([...read.keys()].sort(), paths.map((_, k) => k));
      paths.forEach((p, k) => assert.deepEqual(read.get(k), storageCatalogOf(p, scratch, true), names[k]));
      assert.equal(rollouts.spareWaiting, true, 'still spare');
      await decodesStep(rollouts);
    }));

  it('hands back what it has read when it is given a step to decode, and decodes the step at once', () =>
    withRollouts(async (rollouts, dir, names) => {
      await rollouts.prepareWorker(1, false);
      // a step's worth of directories (the fixture's rank files many times over), read a batch at a time
      const paths = Array.from({ length: 4000 }, (_, k) => join(dir, 'train_data', names[k % names.length]!));
      const helper = rollouts.catalogHelper(paths, paths.map(() => true))!;
      while (Atomics.load(helper.counter, 0) < 64) await new Promise((r) => setTimeout(r, 1));
      await decodesStep(rollouts, async () => {
        const read = await helper.finished;
        assert.ok(read.size >= 64 && read.size < paths.length, `${read.size} of ${paths.length} read before the step was handed over`);
      });
    }));
});

describe('step reads no one waits for any more', () => {
  it('a step every asker left before its turn is never decoded; one another asker still waits for is', async () => {
    const run = copyFixtureRun();
    try {
      const opened: string[] = [];
      const { openMilesRun } = await import('../src/run/miles/index.ts');
      const model = await openMilesRun(run.dir, { reader: { onDecode: recording(opened) } });
      const left = new AbortController();
      const first = model.step(0, false);
      const gone = model.step(1, false, 'asked', left.signal);
      const kept = new AbortController();
      const shared = Promise.allSettled([model.step(2, false, 'asked', kept.signal), model.step(2, false, 'asked', left.signal)]);
      left.abort();
      await assert.rejects(gone, (e: unknown) => (e as Error).name === 'AbortError');
      await first;
      const [two, leftTwo] = await shared;
      assert.ok(two.status === 'fulfilled' && two.value.samples.length > 0, 'step 2 is read for the asker still waiting');
      assert.ok(leftTwo.status === 'rejected' && (leftTwo.reason as Error).name === 'AbortError', 'the asker that left is told so');
      assert.ok(!opened.some((f) => /^(rollout|train)_data\/1(_\d+)?\.pt$/.test(f)), `step 1 was not decoded: ${opened.join(' ')}`);
      // asked again by someone who stays, it is read
      assert.ok((await model.step(1, false)).samples.length > 0);
      await model.close();
      // leaving while the step waits its turn behind another step's decode (a worker's, so this thread is free)
      const queued: string[] = [];
      const waiting = new AbortController();
      const behind = await openMilesRun(run.dir, { reader: { onDecode: (f) => queued.push(f), decodeOffThreadAbove: 0 } });
      const gate = (behind as unknown as { dumps: { decodeGate: { load: { inside: boolean; waiting: number } } } }).dumps.decodeGate;
      const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
      const busy = behind.step(0, false);
      // step 2 is asked once step 0 holds the gate (asked together, either may reach it first) ...
      while (!gate.load.inside) await turn();
      const late = behind.step(2, false, 'asked', waiting.signal);
      // the view's preview of the same step leaves with it
      const previewed = behind.stepPreview!(2, false, waiting.signal);
      // ... and its asker leaves while it waits its turn
      while (gate.load.waiting === 0) {
        assert.ok(gate.load.inside, 'step 0 still holds the gate while step 2 comes to wait for it');
        await turn();
      }
      waiting.abort();
      await assert.rejects(late, (e: unknown) => (e as Error).name === 'AbortError');
      await assert.rejects(previewed, (e: unknown) => (e as Error).name === 'AbortError');
      await busy;
      assert.ok(!queued.some((f) => /^(rollout|train)_data\/2(_\d+)?\.pt$/.test(f)), `step 2 was not decoded: ${queued.join(' ')}`);
      await behind.close();
    } finally {
      run.dispose();
    }
  });
});

describe('DumpReader freshness, fallbacks and caches', () => {
  const fresh = (p: string) => utimesSync(p, new Date(), new Date());

  it('hides a young eval dump, and a young train dump until its train companion exists', async () => {
    const run = copyFixtureRun();
    try {
      const reader = await openReader(run.dir);
      fresh(join(run.dir, 'rollout_data', 'eval_0.pt'));
      fresh(join(run.dir, 'rollout_data', '2.pt'));
      assert.deepEqual(await reader.rolloutIds(), { train: [0, 1, 2], eval: [] });
      renameSync(join(run.dir, 'train_data', '2_0.pt'), join(run.dir, 'train_data', 'x2_0.pt'));
      assert.deepEqual(await reader.rolloutIds(), { train: [0, 1], eval: [] });
      const aged = Date.now() / 1000 - 11;
      utimesSync(join(run.dir, 'rollout_data', '2.pt'), aged, aged);
      utimesSync(join(run.dir, 'rollout_data', 'eval_0.pt'), aged, aged);
      assert.deepEqual(await reader.rolloutIds(), { train: [0, 1, 2], eval: [0] });
    } finally {
      run.dispose();
    }
  });

  for (const offThread of [false, true]) {
    it(`refuses a rollout dump that names a global no miles dump holds (os.system), naming it, running nothing (${offThread ? 'worker' : 'in-thread'} decode)`, async () => {
      const run = copyFixtureRun();
      try {
        const path = join(run.dir, 'rollout_data', '1.pt');
        const dump = (await loadTorch(path)) as { samples: Record<string, unknown>[] };
        const marker = join(run.dir, 'executed');
        dump.samples[2].status = new PyObject('posix', 'system', [`touch ${marker}`]);
        await saveTorch(dump as never, path);
        ageTree(run.dir);
        const reader = await openReader(run.dir, offThread ? { decodeOffThreadAbove: 0 } : {});
        await assert.rejects(reader.summary(1), (e: unknown) => {
          assert.match((e as Error).message, /rollout_data\/1\.pt: .*names the global posix\.system, which this kind of file never holds; refused \(nothing was executed\)/);
          return true;
        });
        assert.equal((await reader.summary(0)).rows.length, 32);
        assert.throws(() => readFileSync(marker), /ENOENT/);
      } finally {
        run.dispose();
      }
    });

    it(`reports a young truncated dump as still being written, an old one as an error (${offThread ? 'worker' : 'in-thread'} decode)`, async () => {
      const run = copyFixtureRun();
      try {
        for (const name of ['rollout_data/1.pt', 'train_data/2_3.pt']) {
          const path = join(run.dir, name);
          truncateSync(path, Math.floor(statSync(path).size / 2));
          utimesSync(path, new Date(), new Date());
        }
        const reader = await openReader(run.dir, offThread ? { decodeOffThreadAbove: 0 } : {});
        for (const id of [1, 2]) {
          await assert.rejects(reader.summary(id), (e: unknown) => {
            assert.ok(e instanceof DumpStillWriting, String(e));
            assert.ok(!(e as Error).message.includes(run.dir), (e as Error).message);
            return true;
          });
        }
        ageTree(run.dir);
        const aged = await openReader(run.dir, offThread ? { decodeOffThreadAbove: 0 } : {});
        // a damaged rollout dump fails its step
        await assert.rejects(aged.summary(1), (e: unknown) => e instanceof Error && !(e instanceof DumpStillWriting));
        // a damaged rank file leaves its step without the train side, said once among the warnings
        const withoutTrain = await aged.summary(2);
        assert.equal(withoutTrain.rows.length, 32);
        assert.ok(withoutTrain.rows.every((r) => r.mean_entropy === null && r.dumped_rank === null && typeof r.reward === 'number'));
        await aged.summary(2);
        const said = aged.warnings().filter((w) => w.includes('train_data/2_3.pt'));
        assert.equal(said.length, 1, JSON.stringify(aged.warnings()));
        assert.match(said[0], /step 2 is shown without its train side/);
        // and so are its samples' tokens: the rollout side, with no train values
        const tokens = await aged.tokens(2, 64);
        assert.equal(tokens.total_len, 32);
        assert.deepEqual([tokens.train_log_probs, tokens.lp_diff, tokens.entropy, tokens.advantages], [null, null, null, null]);
        // The other steps are unaffected, and the metric series skips nothing that can be read.
        assert.equal((await aged.summary(0)).rows.length, 32);
      } finally {
        run.dispose();
      }
    });
  }

  it('answers token reads from the rollout dump when the mirror is missing or foreign', async () => {
    const run = copyFixtureRun();
    try {
      rmSync(join(run.dir, 'dashboard_columns', 'rollout_0.parquet'));
      // A mirror from an older writer (other columns) is not trusted.
      const foreign = parquetWriteBuffer({ columnData: [{ name: 'sample_index', data: [32, 33], type: 'INT32' }] });
      writeFileSync(join(run.dir, 'dashboard_columns', 'rollout_1.parquet'), new Uint8Array(foreign));
      ageTree(run.dir);
      const before = snapshot(run.dir);
      const opened: string[] = [];
      const reader = await openReader(run.dir, { onDecode: recording(opened) });
      const goldens = loadGoldens().filter((g) => /^\/api\/rollout\/[01]\/sample\/\d+\/tokens/.test(g.request) && !g.request.includes('eval'));
      assert.ok(goldens.length > 20);
      for (const g of goldens) {
        if (g.status !== 200) {
          await assert.rejects(answer(reader, g.request));
          continue;
        }
        const d = diffJson(JSON.parse(JSON.stringify(await answer(reader, g.request))), g.body);
        assert.equal(d, null, `${g.file}: ${d}`);
      }
      for (const id of [0, 1]) assert.equal(opened.filter((p) => p === `rollout_data/${id}.pt`).length, 1, 'the rollout dump is decoded once per step');
      assert.equal(snapshot(run.dir), before, 'no mirror is rebuilt inside the run');
    } finally {
      run.dispose();
    }
  });

  it('opens an empty dump directory and refuses a missing one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rlsight-empty-'));
    try {
      const reader = await openReader(dir);
      assert.deepEqual(await reader.rolloutIds(), { train: [], eval: [] });
      assert.deepEqual(await reader.stepAggregates(), []);
      await assert.rejects(reader.summary(0), NotFound);
      await assert.rejects(reader.messages(0, 0), NotFound);
      await assert.rejects(openReader(join(dir, 'nope')), NotFound);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps tensorLru joined steps resident', async () => {
    const run = copyFixtureRun();
    try {
      for (const lru of [1, 2]) {
        const opened: string[] = [];
        const reader = await openReader(run.dir, { tensorLru: lru, onDecode: recording(opened) });
        await reader.summary(0);
        await reader.summary(1);
        await reader.groups(0);
        assert.equal(opened.filter((p) => p === 'rollout_data/0.pt').length, lru === 1 ? 2 : 1, `tensorLru=${lru}`);
      }
    } finally {
      run.dispose();
    }
  });

  it('reads the step a page asks for first and alone, the dump/* aggregates of the whole run after it, one step at a time', async () => {
    const run = copyFixtureRun();
    try {
      const events: string[] = [];
      const reader = await openReader(run.dir, { onDecode: recording(events) });
      // The page asks for the whole run's dump/* aggregates a moment before the step it shows (an older one).
      const aggregates = reader.stepAggregates();
      const summary = reader.summary(1).then((t) => (events.push('summary 1 answered'), t));
      const [agg] = await Promise.all([aggregates, summary]);
      assert.deepEqual(agg.map((a) => a.rollout_id), [0, 1, 2], 'the aggregates stay in step order');
      const stepOf = (e: string) => /^(?:rollout_data\/|train_data\/)(\d+)[._]/.exec(e)?.[1];
      const steps = events.map((e) => stepOf(e) ?? e);
      assert.equal(steps[0], '1', `the asked step decodes first: ${events}`);
      // each step's files are read together: no two steps decode at once
      const runs = steps.filter((s, i) => s !== steps[i - 1] && s !== 'summary 1 answered');
      assert.deepEqual(runs, ['1', '2', '0'], `one step at a time, asked first, then newest first: ${events}`);
    } finally {
      run.dispose();
    }
  });

  it('keeps recent steps by their bytes: 16 askers of three steps at once decode each once; past the budget a step is read again from the cache, never decoded again', async () => {
    const run = copyFixtureRun();
    const cacheDir = mkdtempSync(join(tmpdir(), 'rlsight-step-budget-'));
    const decodes = (opened: string[]) => [0, 1, 2].map((id) => opened.filter((p) => p === `rollout_data/${id}.pt`).length);
    try {
      const opened: string[] = [];
      // no cache directory: a step dropped from memory would be decoded again
      const reader = await openReader(run.dir, { onDecode: recording(opened) });
      const everyone = () => Promise.all(Array.from({ length: 16 }, (_, k) => Promise.all([0, 1, 2].map((id) => (k % 2 ? reader.summary(id) : reader.groups(id))))));
      const answers = await everyone();
      assert.equal(new Set(answers.map((a, k) => (k % 2 ? JSON.stringify(a) : ''))).size, 2, 'every asker got the same answers');
      await everyone();
      assert.deepEqual(decodes(opened), [1, 1, 1], 'each step decoded once, then kept');
      // a budget no step fits in: every read goes back to the derived cache, none to the dump
      const filler = await openReader(run.dir, { cacheDir });
      for (const id of [0, 1, 2]) await filler.summary(id);
      await filler.close();
      const tight: string[] = [];
      const small = await openReader(run.dir, { cacheDir, onDecode: recording(tight), stepRecordBytes: 1 });
      for (let round = 0; round < 3; round++) await Promise.all([0, 1, 2].map((id) => small.summary(id)));
      assert.deepEqual(decodes(tight), [0, 0, 0], `read from the cache: ${tight}`);
    } finally {
      run.dispose();
      rmSync(cacheDir, { recursive: true, force: true });
    }
  });
});

describe('damage reports of a miles run', () => {
  it('are dropped once the damaged file is rewritten or removed, and kept while it stays as it was', async () => {
    const { openMilesRun } = await import('../src/run/miles/index.ts');
    const copy = copyFixtureRun();
    const cache = mkdtempSync(join(tmpdir(), 'rlsight-damage-cache-'));
    const run = await openMilesRun(copy.dir, { cacheDir: cache });
    try {
      const two = join(copy.dir, 'rollout_data', '2.pt');
      const good = readFileSync(two);
      // step 2's dump holds step 1's batch; step 4 is a cut copy of step 2
      writeFileSync(two, readFileSync(join(copy.dir, 'rollout_data', '1.pt')));
      writeFileSync(join(copy.dir, 'rollout_data', '4.pt'), good.subarray(0, 20_000));
      ageTree(copy.dir);
      await assert.rejects(run.step(2, false));
      await assert.rejects(run.step(4, false));
      const named = (file: string): string[] => run.warnings().filter((w) => w.startsWith(`rollout_data/${file}: `));
      await new Promise((r) => setTimeout(r, 1100));
      assert.equal(named('2.pt').length, 1, run.warnings().join('\n'));
      assert.equal(named('4.pt').length, 1, run.warnings().join('\n'));
      // mended: the good batch is back; removed: the cut copy is gone
      writeFileSync(two, good);
      ageTree(copy.dir);
      rmSync(join(copy.dir, 'rollout_data', '4.pt'));
      await new Promise((r) => setTimeout(r, 1100));
      assert.deepEqual([...named('2.pt'), ...named('4.pt')], []);
      assert.equal((await run.step(2, false)).samples.length > 0, true);
    } finally {
      await run.close();
      rmSync(cache, { recursive: true, force: true });
      copy.dispose();
    }
  });
});
