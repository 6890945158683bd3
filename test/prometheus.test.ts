// `--prometheus URL` against a real Prometheus (Debian's package) that scraped fake SGLang engines and a
// router on loopback: the engine series it answers are the ones a collected run of the same engines answers.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PrometheusEngineSource, promQuery, rlsightName, stepFor } from '../src/run/prometheus/engineSource.ts';
import { startServer, type RunningServer } from '../src/server/listen.ts';
import { openRun } from '../src/commands/openRun.ts';
import { startCollectorService } from '../src/collect/service.ts';
import { defaultEngineState, engineMetricsText } from './support/fakeSglang.ts';
import { ageTree, fixturePath } from './support/fixtures.ts';

const PROMETHEUS = process.env.RLSIGHT_PROMETHEUS ?? '/usr/bin/prometheus';
const hasPrometheus = spawnSync(PROMETHEUS, ['--version']).status === 0;
// Without the binary a developer's machine skips; CI installs it, so there a missing one fails.
const skip = hasPrometheus || process.env.CI === 'true' ? false : `no Prometheus at ${PROMETHEUS} (apt-get install prometheus)`;

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = netServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => ok(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** Two engines' counters grow at these rates (per second) from the test's start. */
const PROMPT_PER_S = 300;
const GENERATION_PER_S = 1200;
const REQUESTS_PER_S = 30;
const TTFT_S = 0.1;

/**
 * One engine's `/metrics` as SGLang's prometheus_client writes it (`sglang:` names, TYPE/HELP, model and
 * rank labels, a histogram, a metric the collector does not scrape), with counters growing with wall time
 * and, per dp rank, running requests (5 and 6: summed) and a KV transfer latency (4 and 8 ms: averaged),
 * and a KV transfer speed of +Inf.
 */
function engineText(t0: number): string {
  const elapsed = Date.now() / 1000 - t0;
  const requests = Math.floor(REQUESTS_PER_S * elapsed);
  const state = { ...defaultEngineState(), running: [5, 6], promptTokens: Math.floor(PROMPT_PER_S * elapsed), generationTokens: Math.floor(GENERATION_PER_S * elapsed), ttftSum: TTFT_S * requests, ttftCount: requests };
  const labels = (dp: number): string => `dp_rank="${dp}",engine_type="unified",model_name="qwen",pp_rank="0",tp_rank="0"`;
  return (
    engineMetricsText(state) +
    ['# TYPE sglang:kv_transfer_latency_ms gauge', `sglang:kv_transfer_latency_ms{${labels(0)}} 4.0`, `sglang:kv_transfer_latency_ms{${labels(1)}} 8.0`, '# TYPE sglang:kv_transfer_speed_gb_s gauge', `sglang:kv_transfer_speed_gb_s{${labels(0)}} +Inf`, ''].join('\n')
  );
}

/** The router's `/engine_metrics` over these engines: `sglang_` names, each sample naming its engine in worker_addr. */
function routerText(addrs: string[], t0: number): string {
  return addrs
    .flatMap((addr) =>
      engineText(t0)
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .map((l) => l.replace(/^sglang:/, 'sglang_').replace('{', `{worker_addr="${addr}",`)),
    )
    .join('\n') + '\n';
}

/** The metrics compared, with how close a Prometheus value must be to the collector's (rates: their windows differ). */
const COMPARED: [metric: string, perDpRank: boolean, tolerance: number][] = [
  ['sglang_num_running_reqs', false, 0],
  ['sglang_num_running_reqs', true, 0],
  ['sglang_kv_transfer_latency_ms', false, 0],
  ['sglang_gen_throughput', false, 0],
  ['sglang_token_usage', false, 0],
  ['sglang_kv_transfer_speed_gb_s', false, 0],
  ['sglang_prompt_tokens_per_s', false, 0.1],
  ['sglang_generation_tokens_per_s', false, 0.1],
  ['sglang_ttft_mean_s', false, 1e-6],
];

describe('engine series from a real Prometheus equal a collected run of the same engines', { skip }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rlsight-prom-'));
  const started = Date.now() / 1000;
  const fakes: Server[] = [];
  let prom: ChildProcess;
  let promUrl = '';
  let direct = '';
  let routed = '';
  let collected: RunningServer;
  let server: RunningServer;
  let log = '';
  let window: { t0: number; t1: number };

  async function fake(path: string, text: () => string): Promise<string> {
    const f = createServer((req, res) => {
      if (req.url === path) res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text());
      else res.writeHead(404).end();
    });
    await new Promise<void>((ok) => f.listen(0, '127.0.0.1', ok));
    fakes.push(f);
    return `127.0.0.1:${(f.address() as { port: number }).port}`;
  }

  before(async () => {
    // Engine A is scraped by Prometheus itself and through the router; engine B only through the router.
    direct = await fake('/metrics', () => engineText(started));
    routed = await fake('/metrics', () => engineText(started));
    const router = await fake('/engine_metrics', () => routerText([`http://${direct}`, `http://${routed}`], started));
    const promPort = await freePort();
    promUrl = `http://127.0.0.1:${promPort}`;
    writeFileSync(
      join(tmp, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: sglang\n    static_configs:\n      - targets: ['${direct}']\n  - job_name: sglang-router\n    metrics_path: /engine_metrics\n    static_configs:\n      - targets: ['${router}']\n`,
    );
    prom = spawn(PROMETHEUS, [`--config.file=${join(tmp, 'prometheus.yml')}`, `--storage.tsdb.path=${join(tmp, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    prom.stderr!.on('data', (d) => (log += d));
    prom.once('exit', (code) => (log += `\nexited ${code}`));
    // The collector records the same engines through the same router.
    const collectedDir = join(tmp, 'collected');
    const svc = await startCollectorService({ dashboardDir: join(collectedDir, 'dashboard'), port: 0, flushIntervalS: 0.5, log: () => {}, sglang: { mode: 'router', router: `http://${router}`, intervalS: 1 } });
    let firstScrape = Infinity;
    // Until Prometheus's rates cover full windows (15 s past its first scrape) and a few steps after.
    const deadline = Date.now() + 90_000;
    for (;;) {
      try {
        const r = (await (await fetch(`${promUrl}/api/v1/query?query=timestamp(sglang_num_running_reqs)`)).json()) as any;
        if (r?.data?.result?.length > 0 && firstScrape === Infinity) firstScrape = Date.now() / 1000;
      } catch {
        // not up yet
      }
      if (Date.now() / 1000 > firstScrape + 22) break;
      if (Date.now() > deadline) throw new Error(`Prometheus did not scrape the fake SGLang endpoints:\n${log.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    window = { t0: firstScrape + 17, t1: Date.now() / 1000 - 1 };
    await svc.close();
    ageTree(collectedDir);
    collected = await startServer(await openRun(collectedDir), { port: 0 });
    // A miles run without its engine_series stream: the engine series must come from Prometheus.
    const runDir = join(tmp, 'run');
    cpSync(fixturePath('miles-demo', 'run'), runDir, { recursive: true });
    rmSync(join(runDir, 'dashboard', 'engine_series'), { recursive: true, force: true });
    ageTree(runDir);
    server = await startServer(await openRun(runDir, { prometheus: promUrl }), { port: 0 });
  });

  after(async () => {
    await server?.close();
    await collected?.close();
    prom?.kill('SIGTERM');
    await new Promise((r) => (prom && prom.exitCode === null ? prom.once('exit', r) : r(null)));
    for (const f of fakes) await new Promise((r) => f.close(r));
    rmSync(tmp, { recursive: true, force: true });
  });

  it('answers from Prometheus are never kept (its series change with time, not with the run)', async () => {
    const own = await openRun(fixturePath('miles-demo', 'run'));
    const outside = await openRun(fixturePath('miles-demo', 'run'), { prometheus: 'http://127.0.0.1:9' });
    try {
      assert.equal(typeof own.telemetryVersion(), 'string');
      assert.equal(outside.telemetryVersion(), null);
    } finally {
      await own.close();
      await outside.close();
    }
  });

  it('meta lists the collected run\'s engine metric names: rates and means, no raw counters, nothing unscraped', async () => {
    const keys = async (s: RunningServer): Promise<string[]> => ((await (await fetch(new URL('/api/meta', s.url))).json()) as any).engine_metric_keys;
    const fromProm = await keys(server);
    assert.deepEqual(fromProm, await keys(collected));
    for (const k of ['sglang_generation_tokens_per_s', 'sglang_ttft_mean_s', 'sglang_num_running_reqs']) assert.ok(fromProm.includes(k), k);
    for (const k of ['sglang_generation_tokens_total', 'sglang_time_to_first_token_seconds_sum', 'sglang_uptime_seconds']) assert.ok(!fromProm.includes(k), k);
  });

  for (const [metric, perDpRank, tolerance] of COMPARED) {
    it(`${metric}${perDpRank ? ' per dp rank' : ''}: the same series and values as the collected run`, async () => {
      const answer = async (s: RunningServer): Promise<any[]> => {
        const q = new URLSearchParams({ metric, t0: String(window.t0), t1: String(window.t1), per_dp_rank: String(perDpRank) });
        const r = await fetch(new URL(`/api/timeline/engine_series?${q}`, s.url));
        assert.equal(r.status, 200);
        return ((await r.json()) as any).series;
      };
      const [fromProm, fromRun] = [await answer(server), await answer(collected)];
      // one series per engine (A is not answered twice), in the same order, with the same labels
      assert.deepEqual(
        fromProm.map((s) => [s.addr, s.labels]),
        fromRun.map((s) => [s.addr, s.labels]),
      );
      assert.deepEqual(
        fromRun.map((s) => s.addr),
        [`http://${direct}`, `http://${routed}`].sort().flatMap((a) => (perDpRank ? [a, a] : [a])),
      );
      fromProm.forEach((p, i) => {
        const own = fromRun[i];
        assert.ok(p.value.length >= 3 && own.value.length >= 3, `${p.value.length} and ${own.value.length} points`);
        // a nonfinite point is null in JSON and listed, by its index, with what it was
        const marks = (s: any): [string[], number[]] => [[...new Set<string>((s.nonfinite ?? []).map((n: [number, string]) => n[1]))], (s.nonfinite ?? []).map((n: [number, string]) => n[0])];
        const nulls = (s: any): number[] => s.value.flatMap((v: number | null, k: number) => (v === null ? [k] : []));
        assert.deepEqual(marks(p)[0], marks(own)[0], `${p.addr} nonfinite`);
        assert.deepEqual(marks(p)[1], nulls(p));
        assert.deepEqual(marks(own)[1], nulls(own));
        const expected = own.value[own.value.length - 1];
        for (const v of p.value) {
          if (expected === null) assert.equal(v, null);
          else assert.ok(Math.abs(v - expected) <= tolerance * Math.abs(expected), `${p.addr} ${JSON.stringify(p.labels)}: ${v} from Prometheus, ${expected} collected`);
        }
      });
    });
  }

  it('an unknown metric has no series, as in a collected run', async () => {
    const q = new URLSearchParams({ metric: 'sglang_uptime_seconds', t0: String(window.t0), t1: String(window.t1) });
    assert.deepEqual(((await (await fetch(new URL(`/api/timeline/engine_series?${q}`, server.url))).json()) as any).series, []);
  });

  it('an unreachable Prometheus is a 503 naming it, not a crash', async () => {
    const dead = new PrometheusEngineSource(`http://127.0.0.1:${await freePort()}`, 2000);
    await assert.rejects(dead.series({ kind: 'gauge', base: 'sglang_num_running_reqs', fold: 'sum' }, 0, 10, 10), /Prometheus at http:\/\/127\.0\.0\.1:\d+ is not reachable/);
  });
});

describe('Prometheus name mapping and steps', () => {
  it('maps both SGLang spellings onto the collector\'s names, only those it scrapes, and keeps a window within max points', () => {
    assert.equal(rlsightName('sglang:num_running_reqs'), 'sglang_num_running_reqs');
    assert.equal(rlsightName('sglang_num_running_reqs'), 'sglang_num_running_reqs');
    assert.equal(rlsightName('sglang:time_to_first_token_seconds_sum'), 'sglang_time_to_first_token_seconds_sum');
    assert.equal(rlsightName('sglang:time_to_first_token_seconds_bucket'), null);
    assert.equal(rlsightName('sglang:uptime_seconds'), null);
    assert.equal(rlsightName('up'), null);
    assert.equal(promQuery({ kind: 'gauge', base: 'sglang_token_usage', fold: 'mean' }, 1), 'avg by (instance, worker_addr, engine_type) ({__name__=~"sglang[:_]token_usage"})');
    assert.equal(promQuery({ kind: 'rate', base: 'sglang_generation_tokens_total', fold: 'none' }, 10), 'sum by (instance, worker_addr, engine_type, dp_rank) (rate({__name__=~"sglang[:_]generation_tokens_total"}[20s]))');
    assert.equal(stepFor(0, 14400, 2000), 8);
    assert.ok(14400 / stepFor(0, 14400, 2000) + 1 <= 2000);
    assert.equal(stepFor(0, 10, 2000), 1);
  });
});
