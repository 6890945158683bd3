// Whole-window answers while the warm-up still reads the run's history: they answer at once over the hours it
// finished, say so (`coverage`, and a header that keeps them out of the kept answers), parse no JSONL for the
// hours not read yet, and once every hour is read equal the complete answers byte for byte.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateSyntheticRun } from '../src/demo/index.ts';
import { decodeHeatmapFrame } from '../src/queries/heatmapFrame.ts';
import { defaultWindowS, RunAnswers } from '../src/queries/runAnswers.ts';
import { TelemetryStore } from '../src/run/telemetry/store.ts';
import { createApp } from '../src/server/app.ts';
import type { Coverage } from '../src/wire/index.ts';
import { telemetryOnlyRun } from './support/telemetryRun.ts';

const URLS = [
  '/api/timeline/fleet?x_buckets=240',
  '/api/timeline/outliers?criterion=lowest_util&top_k=4',
  '/api/timeline/outliers?criterion=start_lag&top_k=4',
  '/api/timeline/heatmap?metric=util&x_buckets=120',
  '/api/timeline/heatmap?metric=phase&x_buckets=120',
  '/api/timeline/engine_series?metric=sglang_num_running_reqs',
  '/api/timeline/engine_series?metric=sglang_gen_throughput&format=columns',
  '/api/rlsight/advisory',
  '/api/advisory',
];

function appOver(store: TelemetryStore, dir: string, decoded = { steps: 0 }) {
  return createApp({ run: new RunAnswers(telemetryOnlyRun(store, dir, decoded)) });
}

async function body(app: ReturnType<typeof createApp>, url: string): Promise<{ bytes: Buffer; partial: string | null }> {
  const res = await app.request(url, { headers: { host: '127.0.0.1' } });
  assert.equal(res.status, 200, url);
  return { bytes: Buffer.from(await res.arrayBuffer()), partial: res.headers.get('x-rlsight-coverage') };
}

/** The coverage an answer carries (JSON, heatmap frame header or columnar frame header). */
function coverageOf(url: string, bytes: Buffer): Coverage | undefined {
  if (url.includes('/heatmap')) return decodeHeatmapFrame(bytes).header.coverage;
  if (url.includes('format=columns')) {
    const len = bytes.readUInt32LE(4);
    return JSON.parse(bytes.subarray(8, 8 + len).toString('utf8')).coverage;
  }
  return JSON.parse(bytes.toString('utf8')).coverage;
}

describe('progressive whole-window answers', () => {
  let root = '';
  let dash = '';
  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'rlsight-progressive-'));
    await generateSyntheticRun(join(root, 'run'), { gpus: 8, hours: 2, samplesPerStep: 32, seed: 7 });
    dash = join(root, 'run', 'dashboard');
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test('answer at once over the hours read, with their coverage, and equal the complete answers once all are read', async () => {
    const complete = new Map<string, Buffer>();
    const plain = TelemetryStore.open(dash, { parseWorkers: 0 });
    const plainApp = appOver(plain, join(root, 'run'));
    for (const url of URLS) {
      const a = await body(plainApp, url);
      assert.equal(a.partial, null, url);
      assert.equal(coverageOf(url, a.bytes), undefined, url);
      complete.set(url, a.bytes);
    }

    const store = TelemetryStore.open(dash, { parseWorkers: 0, cacheDir: join(root, 'cache'), partialFromBytes: 0 });
    const decoded = { steps: 0 };
    const app = appOver(store, join(root, 'run'), decoded);
    const total = store.warmUpProgress()!.hoursTotal;
    assert.ok(total >= 3, `the run spans ${total} hours`);
    const parsed = (): number => store.partitions.gpu_util.rowsParsed + store.partitions.engine_series.rowsParsed + store.partitions.phases.rowsParsed;
    const seen = new Map<string, number>();
    let rounds = 0;
    let partialAdvisories = 0;
    let partialFleets = 0;
    for (;;) {
      const progress = store.warmUpProgress()!;
      if (!progress.running) break;
      rounds++;
      const parsedBefore = parsed();
      const stepsBefore = decoded.steps;
      let advisoryPartial = false;
      for (const url of URLS) {
        const a = await body(app, url);
        const cov = coverageOf(url, a.bytes);
        if (url.includes('advisory') && cov !== undefined) advisoryPartial = true;
        if (cov === undefined) {
          // every hour this answer reads (its streams, its window) is read already: it is the complete answer
          assert.equal(a.partial, null, url);
          assert.deepEqual(a.bytes, complete.get(url), url);
          continue;
        }
        // an answer counts the hours of the streams it reads within its window: late starts rank the current
        // attempt only, phase answers read the phases stream, and where the generated run's hours fall (which
        // stream has a file in its first and last hour) depends on the clock it was written at
        assert.ok(cov.hours_total >= 1 && cov.hours_total <= total, url);
        assert.ok(cov.hours_done >= 0 && cov.hours_done < cov.hours_total, url);
        // the hours read when the round began, or more: an answer may fold in hours it read itself meanwhile
        if (cov.hours_total === total) {
          assert.ok(cov.hours_done >= progress.hoursDone && cov.hours_done <= store.warmUpProgress()!.hoursDone, `${url}: ${cov.hours_done} of ${progress.hoursDone}..${store.warmUpProgress()!.hoursDone}`);
        }
        assert.equal(a.partial, `${cov.hours_done}/${cov.hours_total}`, url);
        assert.ok(cov.unread.length > 0 && cov.unread.every(([a0, a1]) => a1 > a0), url);
        // asked again after more hours were read, it is not the kept earlier answer
        assert.ok(cov.hours_done >= (seen.get(url) ?? 0), url);
        seen.set(url, cov.hours_done);
      }
      assert.equal(parsed(), parsedBefore, 'a partial answer parses no JSONL');
      // (the advisory's own hours may all be read before the gpu hours are: then it is complete and reads the step)
      if (advisoryPartial) {
        partialAdvisories++;
        assert.equal(decoded.steps, stepsBefore, 'a partial advisory leaves the newest step to the complete answer');
      }
      // the newest hours are read first: a partial fleet's util band over a read stretch is the complete one's
      const fleetBytes = (await body(app, URLS[0]!)).bytes;
      const fleet = JSON.parse(fleetBytes.toString('utf8'));
      const want = JSON.parse(complete.get(URLS[0]!)!.toString('utf8'));
      const width = (fleet.t1 - fleet.t0) / fleet.x_buckets;
      let compared = 0;
      // its hours' GPU samples and phases are read ahead of their engine series: it may be complete already
      if (fleet.coverage === undefined) {
        assert.deepEqual(fleetBytes, complete.get(URLS[0]!));
        compared = fleet.x_buckets;
      }
      if (fleet.coverage !== undefined) partialFleets++;
      for (let b = 0; fleet.coverage !== undefined && b < fleet.x_buckets; b++) {
        const lo = fleet.t0 + b * width;
        const hi = lo + width;
        const unread = (fleet.coverage as Coverage).unread.some(([u0, u1]) => u1 > lo - 1 && u0 < hi + 1);
        if (unread) {
          if (fleet.coverage.unread.some(([u0, u1]: [number, number]) => u0 <= lo && u1 >= hi)) assert.equal(fleet.band.p50[b], null, `bucket ${b} lies unread`);
          continue;
        }
        assert.equal(fleet.band.p50[b], want.band.p50[b], `bucket ${b}`);
        assert.equal(fleet.band.min[b], want.band.min[b], `bucket ${b}`);
        compared++;
      }
      if (progress.hoursDone > 0) assert.ok(compared > 0);
      // three files (gpu_util, engine_series, phases) make an hour
      for (let i = 0; i < 3; i++) store.warmUpStep();
      assert.ok(rounds <= total + 1);
    }
    assert.ok(rounds >= 2, 'answers were asked at several stages of the warm-up');
    assert.ok(partialAdvisories >= 1, 'the advisory was asked while it was partial');
    assert.ok(partialFleets >= 1, 'the fleet was compared with the complete one while it was partial');
    for (const url of URLS) {
      const a = await body(app, url);
      assert.equal(a.partial, null, url);
      if (url.includes('advisory')) assert.ok(decoded.steps > 0, 'the complete advisory judges the newest step');
      assert.ok(a.bytes.equals(complete.get(url)!), `${url}: the answer after the warm-up is the complete one`);
    }
    store.close();
    plain.close();
  });

  test('while the warm-up runs, a window whose unread hours are a moment\'s parse answers complete, a bigger one partial', async () => {
    const plain = TelemetryStore.open(dash, { parseWorkers: 0 });
    const complete = (await body(appOver(plain, join(root, 'run')), URLS[0]!)).bytes;
    plain.close();
    // every hour file of the partitioned streams (an answer's unread hours are some of them)
    const streams = readdirSync(dash).filter((d) => statSync(join(dash, d)).isDirectory());
    const bytes = streams.reduce((n, d) => n + readdirSync(join(dash, d)).reduce((m, f) => m + statSync(join(dash, d, f)).size, 0), 0);
    for (const [partialFromBytes, partial] of [[bytes + 1, false], [1, true]] as const) {
      const store = TelemetryStore.open(dash, { parseWorkers: 0, cacheDir: mkdtempSync(join(root, 'cache-small-')), partialFromBytes });
      assert.equal(store.warmUpProgress()!.hoursDone, 0);
      const a = await body(appOver(store, join(root, 'run')), URLS[0]!);
      assert.equal(coverageOf(URLS[0]!, a.bytes) !== undefined, partial, `threshold ${partialFromBytes} of ${bytes} bytes`);
      if (!partial) assert.deepEqual(a.bytes, complete);
      store.close();
    }
  });

  test('the timeline opens on as many newest hours as a first cold read of their GPU telemetry affords', async () => {
    // 1,024 GPUs write ~320 MB of gpu_util an hour: the newest hour; a 128-GPU run, the widest window
    assert.equal(defaultWindowS(323e6), 3600);
    assert.equal(defaultWindowS(130e6), 4 * 3600);
    assert.equal(defaultWindowS(250e6), 2 * 3600);
    assert.equal(defaultWindowS(2e9), 3600);
    assert.equal(defaultWindowS(0), 4 * 3600);
    const store = TelemetryStore.open(dash, { parseWorkers: 0 });
    const meta = JSON.parse((await body(appOver(store, join(root, 'run')), '/api/meta')).bytes.toString('utf8'));
    assert.equal(meta.default_window_s, undefined, 'a small fleet opens on the widest window');
    store.close();
  });

  test('while people are asking, the warm-up leaves a parse thread free for their window reads', () => {
    const store = TelemetryStore.open(dash, { parseWorkers: 2, parallelFromBytes: 0, partialFromBytes: 0, cacheDir: join(root, 'cache-threads') });
    try {
      assert.equal(store.parseWorkersReady(), 2);
      const pool = store.partitions.gpu_util.pool!;
      store.warmUpStep(1);
      assert.ok(pool.idle() >= 0, 'one thread left free');
      store.warmUpStep();
      assert.equal(pool.idle(), -1, 'quiet: every thread reads ahead');
    } finally {
      store.close();
    }
  });

  test('window answers parse their cold hours on the parse threads alone and equal the answers read on this thread', async () => {
    const urls = [
      '/api/timeline/gpu?lanes=g:0,g:5&max_points=500',
      '/api/timeline/gpu?lanes=g:1&format=columns',
      '/api/timeline/phases?lanes=g:0,g:2',
      '/api/timeline/heatmap?metric=lifecycle&x_buckets=200&max_rows=50',
    ];
    const plain = TelemetryStore.open(dash, { parseWorkers: 0 });
    const threaded = TelemetryStore.open(dash, { parseWorkers: 1, parallelFromBytes: 0 });
    try {
      assert.equal(threaded.parseWorkersReady(), 1);
      const plainApp = appOver(plain, join(root, 'run'));
      const threadedApp = appOver(threaded, join(root, 'run'));
      for (const url of urls) assert.ok((await body(threadedApp, url)).bytes.equals((await body(plainApp, url)).bytes), url);
      for (const stream of ['gpu_util', 'phases', 'trajectories'] as const) {
        const r = threaded.partitions[stream];
        assert.ok(r.workerFills > 1, `${stream}: the thread read the hours`);
        assert.equal(r.fills, r.workerFills, `${stream}: this thread parsed none`);
      }
    } finally {
      threaded.close();
      plain.close();
    }
  });
});
