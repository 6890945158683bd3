import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { once } from 'node:events';
import { type IncomingMessage, request } from 'node:http';
import { after, describe, test } from 'node:test';
import type { RunSources } from '../queries/runAnswers.ts';
import { DumpStillWriting, NotFound } from '../run/errors.ts';
import { BadArgument } from '../queries/limits.ts';
import { createApp } from './app.ts';
import { startServer } from './listen.ts';
import { foreground } from '../run/foreground.ts';
import { emptyCatalog } from './events.ts';
import { scrubPaths } from './errors.ts';
import { allowedHosts, hostName } from './security.ts';

const ROOT = '/srv/runs/secret-run';
const calls: { name: string; args: unknown[] }[] = [];

/** A run whose answers are canned, recording what the server asked. */
function stubRun(over: Partial<RunSources> = {}): RunSources {
  const record =
    (name: string, answer: unknown = {}) =>
    async (...args: unknown[]) => {
      calls.push({ name, args });
      return answer as any;
    };
  return {
    roots: [ROOT],
    meta: async (p) => ({
      mode: p.follow ? 'follow' : 'static',
      run_name: 'r',
      start_ts: 1,
      wandb_url: null,
      data_buffer_length: null,
      time_range: [1, 2],
      rollout_ids: { train: [0], eval: [] },
      metric_keys: [],
      engine_metric_keys: [],
      step_keys: [],
      capabilities: {
        has_metrics: false,
        has_tokenizer: false,
        has_timeline: false,
        has_engine_series: false,
        max_window_s: 14400,
        use_utilization_overview: p.useUtilizationOverview,
      },
    }),
    topology: record('topology', { lanes: [], windows: [] }),
    selectLanes: record('selectLanes', { lanes: [] }),
    phases: record('phases', { phases: [{ t0: 1, t1: Number.NaN }] }),
    gpu: record('gpu', { lanes: { a: { ts: new Float64Array([1, 2]), util: [Infinity, 3] } } }),
    gpuProcesses: record('gpuProcesses', { processes: [] }),
    heatmap: async () => ({ frame: new Uint8Array([1, 0, 0, 0, 0x7b]) }),
    fleet: record('fleet', {}),
    outliers: record('outliers', { outliers: [] }),
    engineSeries: record('engineSeries', { series: [] }),
    bubbles: record('bubbles', { bubbles: [] }),
    metrics: record('metrics', {}),
    advisory: async () => ({ advisories: [], mfu: null }),
    summary: record('summary', { rows: 'x'.repeat(5000).split('') }),
    summaryPreview: record('summaryPreview', { rows: [] }) as RunSources['summaryPreview'],
    groups: record('groups', {}),
    trajectories: record('trajectories', {}),
    sampleStep: record('sampleStep', {}),
    listing: async (id, primary) => ({ id, name: 'r', start_ts: 1, gpus: 0, steps: 1, formats: ['miles'], primary, end_ts: null, status: 'finished', warnings: [], config: {}, latest: {} }),
    messages: record('messages', {}),
    messagesOrNone: record('messagesOrNone', {}),
    tokens: record('tokens', {}),
    advance: async () => {},
    close: async () => {},
    catalog: async () => emptyCatalog(),
    warnings: () => [],
    name: 'r',
    rolloutIds: async () => ({ train: [0], eval: [] }),
    stepAggregates: record('stepAggregates', []),
    stepAggregate: record('stepAggregate', undefined),
    stepMetrics: record('stepMetrics', new Map()) as RunSources['stepMetrics'],
    stepFacts: record('stepFacts', { steps: [], warnings: [] }),
    sampleTexts: record('sampleTexts', []),
    async *sampleTextBatches() {},
    stepStamp: async () => 'fixed',
    metricsRecords: () => [],
    topologySnapshots: () => [],
    phaseEvents: () => [],
    readPhases: async () => {},
    startTs: () => 1,
    hasTraces: false,
    trace: record('trace', {}),
    traceDetails: record('traceDetails', {}),
    searchTexts: () => ({ stepBatches: async function* () {} }),
    telemetryVersion: () => null,
    ...over,
  };
}

const staticDir = mkdtempSync(join(tmpdir(), 'rlsight-static-'));
mkdirSync(join(staticDir, 'assets'));
writeFileSync(join(staticDir, 'index.html'), '<!doctype html><title>app</title>');
writeFileSync(join(staticDir, 'assets', 'app.js'), 'console.log(1)');
writeFileSync(join(staticDir, '..', 'secret.txt'), 'do not serve');
after(() => {
  rmSync(staticDir, { recursive: true, force: true });
  rmSync(join(staticDir, '..', 'secret.txt'), { force: true });
});

const get = (app: ReturnType<typeof createApp>, path: string, headers: Record<string, string> = {}) =>
  app.request(`http://127.0.0.1:7788${path}`, { headers: { host: '127.0.0.1:7788', ...headers } });

describe('security', () => {
  const app = createApp({ run: stubRun(), options: { staticDir, allowHosts: ['box.example'] } });

  test('host names parse with ports and IPv6 brackets', () => {
    assert.equal(hostName('LocalHost:7788'), 'localhost');
    assert.equal(hostName('[::1]:7788'), '[::1]');
    assert.equal(hostName('127.0.0.1'), '127.0.0.1');
    assert.deepEqual([...allowedHosts('0.0.0.0', [])].sort(), ['127.0.0.1', '::1', '[::1]', 'localhost']);
    assert.ok(allowedHosts('10.1.2.3', []).has('10.1.2.3'));
  });

  test('a foreign Host header is refused (DNS rebinding); loopback, bound and allowed names pass', async () => {
    for (const host of ['evil.example', 'evil.example:7788', '127.0.0.1.evil.example', '']) {
      const res = await get(app, '/api/meta', { host });
      assert.equal(res.status, 403, host);
    }
    for (const host of ['localhost:7788', '127.0.0.1:7788', '[::1]:7788', 'box.example:7788']) {
      assert.equal((await get(app, '/api/meta', { host })).status, 200, host);
    }
  });

  test('only GET and HEAD; no CORS headers', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await app.request('http://127.0.0.1:7788/api/meta', { method, headers: { host: '127.0.0.1' } });
      assert.equal(res.status, 405, method);
    }
    const res = await get(app, '/api/meta', { origin: 'http://evil.example' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  test('path parameters never become file names', async () => {
    for (const path of [
      '/api/rollout/..%2f..%2fetc/summary',
      '/api/rollout/..%2F..%2Fetc%2Fpasswd/summary',
      '/api/rollout/0/sample/..%2f1/tokens',
      '/api/rollout/%2e%2e/groups',
      '/api/rollout/1e3/summary',
    ]) {
      const res = await get(app, path);
      assert.ok(res.status === 400 || res.status === 404, `${path} -> ${res.status}`);
    }
    assert.ok(!calls.some((c) => c.name === 'summary' || c.name === 'groups' || c.name === 'tokens'));
  });

  test('static files stay inside the app folder', async () => {
    assert.equal((await get(app, '/')).status, 200);
    assert.equal((await get(app, '/')).headers.get('cache-control'), 'no-cache');
    const js = await get(app, '/assets/app.js');
    assert.equal(js.status, 200);
    assert.equal(await js.text(), 'console.log(1)');
    assert.equal((await get(app, '/static/assets/app.js')).status, 200);
    for (const path of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/..%2f..%2fsecret.txt',
      '/static/..%2fsecret.txt',
      '/static/%2e%2e/secret.txt',
      '/assets/%252e%252e/%252e%252e/secret.txt',
      '/static/',
      '/static/nope.js',
      '/assets/..\\..\\secret.txt',
    ]) {
      const res = await get(app, path);
      assert.equal(res.status, 404, path);
      assert.doesNotMatch(await res.text(), /do not serve/);
    }
    assert.equal((await get(app, '/static/')).headers.get('cache-control'), 'no-cache');
  });
});

describe('answers', () => {
  test('non-finite floats and typed arrays serialize as JSON', async () => {
    const app = createApp({ run: stubRun() });
    assert.deepEqual(await (await get(app, '/api/timeline/phases')).json(), { phases: [{ t0: 1, t1: null }] });
    assert.deepEqual(await (await get(app, '/api/timeline/gpu')).json(), { lanes: { a: { ts: [1, 2], util: [null, 3] } } });
  });

  test('gzip when the client accepts it', async () => {
    const app = createApp({ run: stubRun() });
    const res = await get(app, '/api/rollout/0/summary', { 'accept-encoding': 'gzip' });
    assert.equal(res.headers.get('content-encoding'), 'gzip');
    const body = JSON.parse(gunzipSync(Buffer.from(await res.arrayBuffer())).toString());
    assert.equal(body.rows.length, 5000);
    const plain = await get(app, '/api/rollout/0/summary');
    assert.equal(plain.headers.get('content-encoding'), null);
  });

  test('large heatmap frames are gzipped too, byte-exact after decoding', async () => {
    const frame = new Uint8Array(8000).map((_, i) => (i < 4 ? [2, 0, 0, 0][i] : i % 7));
    const app = createApp({ run: stubRun({ heatmap: async () => ({ frame }) }) });
    const res = await get(app, '/api/timeline/heatmap', { 'accept-encoding': 'gzip' });
    assert.equal(res.headers.get('content-encoding'), 'gzip');
    assert.deepEqual(new Uint8Array(gunzipSync(Buffer.from(await res.arrayBuffer()))), frame);
  });

  test('the heatmap is binary', async () => {
    const res = await get(createApp({ run: stubRun() }), '/api/timeline/heatmap');
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual([...new Uint8Array(await res.arrayBuffer())], [1, 0, 0, 0, 0x7b]);
  });

  test('parameters are validated at the edge, naming the parameter', async () => {
    const app = createApp({ run: stubRun() });
    const cases: [string, RegExp][] = [
      ['/api/timeline/phases?t0=abc', /^t0: /],
      ['/api/timeline/phases?t0=nan', /^t0: /],
      // written as a number, but too large to be one
      ['/api/timeline/phases?t0=1e400', /^t0: expected a finite number, got "1e400"$/],
      ['/api/timeline/gpu?t1=-1e999', /^t1: expected a finite number/],
      // a parameter given twice, whichever value is good
      ['/api/timeline/phases?t0=1000000&t0=abc', /^t0: given 2 times; give it once$/],
      ['/api/runs/run/timeline/phases?t0=1&t1=2&t1=3', /^t1: given 2 times; give it once$/],
      ['/api/timeline/phases?t0=5&t1=4', /^bad window: t1=4\.0 <= t0=5\.0$/],
      ['/api/timeline/phases?t0=1000000.0&t1=1014400.5', /^window 14400s exceeds max_window_s 14400$/],
      ['/api/timeline/gpu?t0=-1e308&t1=1e308', /^window t1 - t0 is not a finite number of seconds \(t0=-1e\+308, t1=1e\+308\); max_window_s is 14400$/],
      ['/api/timeline/gpu?max_points=1', /^max_points=1 must be >= 2$/],
      ['/api/timeline/heatmap?x_buckets=many', /^x_buckets: /],
      ['/api/timeline/heatmap?x_buckets=4001', /^x_buckets=4001 out of range \[2, 4000\]$/],
      ['/api/timeline/outliers', /^criterion: is required$/],
      ['/api/timeline/outliers?criterion=lowest_util&top_k=0', /^top_k=0 out of range \[1, 256\]$/],
      ['/api/timeline/engine_series', /^metric: is required$/],
      ['/api/timeline/engine_series?metric=m&per_dp_rank=maybe', /^per_dp_rank: /],
      ['/api/metrics', /^keys: is required$/],
      ['/api/metrics?keys=,,', /^keys must be a non-empty comma-separated list$/],
      ['/api/rollout/abc/summary', /^rollout_id: /],
      ['/api/rollout/1.5/groups', /^rollout_id: /],
      ['/api/rollout/0/sample/abc/tokens', /^sample_index: /],
      ['/api/rollout/0/summary?eval=maybe', /^eval: /],
      ['/api/rollout/0/trajectories?sample_index=x', /^sample_index: /],
      ['/api/rollout/0/sample/0/tokens?start=x', /^start: /],
    ];
    for (const [path, detail] of cases) {
      const res = await get(app, path);
      assert.equal(res.status, 400, path);
      assert.match(((await res.json()) as any).detail, detail, path);
    }
    // a run's name spelled with escapes reaches the same run's API
    const spelled = await get(app, '/api/runs/%72un/rollout/abc/summary');
    assert.equal(spelled.status, 400);
    assert.match(((await spelled.json()) as any).detail, /^rollout_id: /);
  });

  test('pydantic-style booleans and defaults reach the query', async () => {
    calls.length = 0;
    const app = createApp({ run: stubRun() });
    for (const [v, expected] of [['1', true], ['yes', true], ['on', true], ['false', false], ['0', false]] as const) {
      await get(app, `/api/rollout/3/summary?eval=${v}`);
      const call = calls.at(-1)!;
      assert.deepEqual({ name: call.name, args: call.args.slice(0, 2) }, { name: 'summary', args: [3, expected] });
      assert.ok(call.args[2] instanceof AbortSignal, 'the step read learns when its asker leaves');
    }
    await get(app, '/api/rollout/-1/sample/7/tokens?end=4');
    assert.deepEqual(calls.at(-1), { name: 'tokens', args: [-1, 7, { start: 0, end: 4, evaluation: false }] });
    await get(app, '/api/metrics?keys=a,,a,b');
    assert.deepEqual(calls.at(-1), { name: 'metrics', args: [{ keys: ['a', 'a', 'b'], x: 'rollout/step', t0: undefined, t1: undefined, progressive: false }] });
    await get(app, '/api/metrics?keys=dump/reward_mean&progressive=true');
    assert.deepEqual(calls.at(-1), { name: 'metrics', args: [{ keys: ['dump/reward_mean'], x: 'rollout/step', t0: undefined, t1: undefined, progressive: true }] });
  });

  test('a step preview still waiting for its train side says so in a header (never kept), a complete one does not', async () => {
    const table = { rollout_id: 3, evaluation: false, columns: ['sample_index'], rows: [{ sample_index: 0 }] };
    let pending = true;
    const asked: (boolean | undefined)[] = [];
    const app = createApp({
      run: stubRun({
        summaryPreview: async (_id, _evaluation, _signal, firstSamples) => {
          asked.push(firstSamples);
          return pending ? { ...table, train_pending: true as const } : table;
        },
      }),
    });
    const first = await get(app, '/api/rlsight/rollout/3/preview');
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-rlsight-coverage'), '0/1');
    assert.equal(((await first.json()) as { train_pending?: boolean }).train_pending, true);
    pending = false;
    const second = await get(app, '/api/rlsight/rollout/3/preview');
    assert.equal(second.headers.get('x-rlsight-coverage'), null);
    assert.deepEqual(await second.json(), table, 'the pending answer was not kept');
    assert.equal((await get(app, '/api/rlsight/rollout/x/preview')).status, 400);
    // `first` asks for the step's first samples when they come ahead of the rest
    await get(app, '/api/rlsight/rollout/3/preview?first=true');
    assert.deepEqual(asked, [false, false, true]);
    const bad = await get(app, '/api/rlsight/rollout/3/preview?first=soon');
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /first/);
  });

  test('typed failures map to 503 / 404 / 400, a defect to a bare 500, never with a path', async () => {
    const fail = (err: unknown) => stubRun({ summary: async () => Promise.reject(err) });
    const cases: [unknown, number, RegExp][] = [
      [new DumpStillWriting(`${ROOT}/rollout_data/3.pt`), 503, /^dump still being written: rollout_data\/3\.pt$/],
      [new NotFound(`no such file: ${ROOT}/rollout_data/42.pt`), 404, /^no such file: rollout_data\/42\.pt$/],
      [new BadArgument('lanes', 'bad lane selector'), 400, /^bad lane selector$/],
      [Object.assign(new Error(`ENOENT: no such file or directory, open '${ROOT}/x'`), { code: 'ENOENT' }), 404, /^not found$/],
      [new TypeError(`boom at ${ROOT}/secret`), 500, /^Internal Server Error$/],
    ];
    const original = console.error;
    console.error = () => {};
    try {
      for (const [err, status, detail] of cases) {
        const res = await get(createApp({ run: fail(err) }), '/api/rollout/3/summary');
        assert.equal(res.status, status);
        const text = await res.text();
        assert.doesNotMatch(text, /\/srv\/runs/);
        assert.match(JSON.parse(text).detail, detail);
        if (status === 503) assert.equal(res.headers.get('retry-after'), '5');
      }
    } finally {
      console.error = original;
    }
  });

  test('scrubPaths keeps run-relative names and drops other absolute paths', () => {
    assert.equal(scrubPaths(`[Errno 2] No such file: '${ROOT}/rollout_data/42.pt'`, [ROOT]), "[Errno 2] No such file: 'rollout_data/42.pt'");
    assert.equal(scrubPaths("cannot open '/tmp/cache/x/rollout_3.parquet'", []), "cannot open 'rollout_3.parquet'");
    assert.equal(scrubPaths('lane http://10.0.0.1:15000 ok', []), 'lane http://10.0.0.1:15000 ok');
    // an address of this API is not a path of the machine
    assert.equal(scrubPaths("no run 'nope' is served (see /api/runs)", []), "no run 'nope' is served (see /api/runs)");
  });

  test('unknown routes are JSON 404s', async () => {
    const res = await get(createApp({ run: stubRun() }), '/api/nope');
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { detail: 'Not Found' });
  });
});

describe('the background waits for an answer to be sent', () => {
  test('a request counts as in flight until its body\'s last byte is out, not only until its handler returns', async () => {
    // a body far larger than the socket buffers: a client that does not read holds it half sent
    const tokenIds = Float64Array.from({ length: 1_500_000 }, (_, i) => i + 0.1234567891);
    const server = await startServer(stubRun({ tokens: async () => ({ token_ids: tokenIds }) as any }), { port: 0, followTimer: false });
    try {
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = request(`${server.url}api/rollout/0/sample/0/tokens`, (r) => resolve(r));
        req.on('error', reject);
        req.end();
      });
      res.pause();
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(foreground.quietForMs(), 0, 'the answer is still being sent');
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.resume();
      await once(res, 'end');
      assert.ok(bytes > 20_000_000, `${bytes} bytes`);
      await new Promise((r) => setTimeout(r, 20));
      assert.ok(foreground.quietForMs() > 0, 'sent: nothing in flight any more');
    } finally {
      await server.close();
    }
  });
});
