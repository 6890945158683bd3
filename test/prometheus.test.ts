// `--prometheus URL` against a real Prometheus (Debian's package) that scraped a fake SGLang /metrics
// endpoint on loopback: the engine series come back from range queries under rlsight's names.
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

/** A fake SGLang server's /metrics in the Prometheus text format, with the names SGLang uses. */
function sglangMetrics(): string {
  return [
    '# HELP sglang:num_running_reqs The number of running requests.',
    '# TYPE sglang:num_running_reqs gauge',
    'sglang:num_running_reqs{model_name="qwen",engine_type="unified"} 7',
    '# TYPE sglang:num_queue_reqs gauge',
    'sglang:num_queue_reqs{model_name="qwen",engine_type="unified"} 3',
    '# TYPE sglang:num_decode_transfer_queue_reqs gauge',
    'sglang:num_decode_transfer_queue_reqs{model_name="qwen"} 2',
    '# TYPE sglang:kv_transfer_latency_ms histogram',
    'sglang:kv_transfer_latency_ms_bucket{model_name="qwen",le="10"} 0',
    'sglang:kv_transfer_latency_ms_bucket{model_name="qwen",le="+Inf"} 0',
    'sglang:kv_transfer_latency_ms_sum{model_name="qwen"} 0',
    'sglang:kv_transfer_latency_ms_count{model_name="qwen"} 0',
    // as the router's /engine_metrics gives them: one sample per engine, named in worker_addr
    '# TYPE sglang:gen_throughput gauge',
    'sglang:gen_throughput{model_name="qwen",worker_addr="http://10.0.0.5:30000"} 11',
    'sglang:gen_throughput{model_name="qwen",worker_addr="10.0.0.6:30000"} 12',
    '',
  ].join('\n');
}

describe('engine series from a real Prometheus', { skip }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rlsight-prom-'));
  let fake: Server;
  let prom: ChildProcess;
  let promUrl = '';
  let sglangAddr = '';
  let server: RunningServer;
  let log = '';

  before(async () => {
    fake = createServer((req, res) => {
      if (req.url === '/metrics') res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(sglangMetrics());
      else res.writeHead(404).end();
    });
    await new Promise<void>((ok) => fake.listen(0, '127.0.0.1', ok));
    const fakePort = (fake.address() as { port: number }).port;
    sglangAddr = `127.0.0.1:${fakePort}`;
    const promPort = await freePort();
    promUrl = `http://127.0.0.1:${promPort}`;
    writeFileSync(
      join(tmp, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: sglang\n    metrics_path: /metrics\n    static_configs:\n      - targets: ['${sglangAddr}']\n`,
    );
    prom = spawn(PROMETHEUS, [`--config.file=${join(tmp, 'prometheus.yml')}`, `--storage.tsdb.path=${join(tmp, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    prom.stderr!.on('data', (d) => (log += d));
    prom.once('exit', (code) => (log += `\nexited ${code}`));
    // Until Prometheus has scraped a few samples.
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const r = (await (await fetch(`${promUrl}/api/v1/query?query=count_over_time(sglang:num_running_reqs[1m])`)).json()) as any;
        if (Number(r?.data?.result?.[0]?.value?.[1] ?? 0) >= 3) break;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) throw new Error(`Prometheus did not scrape the fake SGLang endpoint:\n${log.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    // A miles run without its engine_series stream: the overlays must come from Prometheus.
    const runDir = join(tmp, 'run');
    cpSync(fixturePath('miles-demo', 'run'), runDir, { recursive: true });
    rmSync(join(runDir, 'dashboard', 'engine_series'), { recursive: true, force: true });
    ageTree(runDir);
    server = await startServer(await openRun(runDir, { prometheus: promUrl }), { port: 0 });
  });

  after(async () => {
    await server?.close();
    prom?.kill('SIGTERM');
    await new Promise((r) => (prom && prom.exitCode === null ? prom.once('exit', r) : r(null)));
    await new Promise((r) => fake?.close(r));
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

  it('meta advertises the SGLang series under rlsight names', async () => {
    const meta: any = await (await fetch(new URL('/api/meta', server.url))).json();
    assert.equal(meta.capabilities.has_engine_series, true);
    for (const k of ['sglang_num_running_reqs', 'sglang_num_queue_reqs', 'sglang_num_decode_transfer_queue_reqs', 'sglang_kv_transfer_latency_ms_mean']) assert.ok(meta.engine_metric_keys.includes(k), k);
  });

  it('the overlay series carry the scraped values, at most max_points of them', async () => {
    const t1 = Date.now() / 1000;
    const q = new URLSearchParams({ metric: 'sglang_num_running_reqs', t0: String(t1 - 120), t1: String(t1), max_points: '200' });
    const r = await fetch(new URL(`/api/timeline/engine_series?${q}`, server.url));
    assert.equal(r.status, 200);
    const body: any = await r.json();
    assert.equal(body.series.length, 1);
    const s = body.series[0];
    assert.equal(s.addr, `http://${sglangAddr}`);
    assert.equal(s.labels.model_name, 'qwen');
    assert.ok(s.value.length >= 3 && s.value.length <= 200, `${s.value.length} points`);
    assert.ok(s.value.every((v: number) => v === 7));
    // A coarser step when fewer points are asked for.
    const few: any = await (await fetch(new URL(`/api/timeline/engine_series?${new URLSearchParams({ metric: 'sglang_num_running_reqs', t0: String(t1 - 120), t1: String(t1), max_points: '5' })}`, server.url))).json();
    assert.ok(few.series[0].value.length <= 5);
    const queue: any = await (await fetch(new URL(`/api/timeline/engine_series?${new URLSearchParams({ metric: 'sglang_num_queue_reqs', t0: String(t1 - 120), t1: String(t1) })}`, server.url))).json();
    assert.ok(queue.series[0].value.every((v: number) => v === 3));
  });

  it('a series scraped through the router is the engine its worker_addr names, not the router', async () => {
    const t1 = Date.now() / 1000;
    const body: any = await (await fetch(new URL(`/api/timeline/engine_series?${new URLSearchParams({ metric: 'sglang_gen_throughput', t0: String(t1 - 120), t1: String(t1) })}`, server.url))).json();
    const byAddr = Object.fromEntries(body.series.map((s: any) => [s.addr, s]));
    assert.deepEqual(Object.keys(byAddr).sort(), ['http://10.0.0.5:30000', 'http://10.0.0.6:30000']);
    assert.ok(byAddr['http://10.0.0.5:30000'].value.every((v: number) => v === 11));
    assert.ok(byAddr['http://10.0.0.6:30000'].value.every((v: number) => v === 12));
    assert.deepEqual(byAddr['http://10.0.0.6:30000'].labels, { model_name: 'qwen' });
  });

  it('an unreachable Prometheus is a 503 naming it, not a crash', async () => {
    const dead = new PrometheusEngineSource(`http://127.0.0.1:${await freePort()}`, 2000);
    await assert.rejects(dead.series('sglang_num_running_reqs', 0, 10, 10), /Prometheus at http:\/\/127\.0\.0\.1:\d+ is not reachable/);
  });
});

describe('Prometheus name mapping and steps', () => {
  it('maps SGLang names and keeps a window within max points', () => {
    assert.equal(rlsightName('sglang:num_running_reqs'), 'sglang_num_running_reqs');
    assert.equal(rlsightName('sglang:kv_transfer_speed_gb_s_bucket'), null);
    assert.equal(rlsightName('sglang:kv_transfer_speed_gb_s_sum'), 'sglang_kv_transfer_speed_gb_s_mean');
    assert.equal(rlsightName('up'), null);
    assert.equal(promQuery('sglang_num_queue_reqs', 1), 'sglang:num_queue_reqs');
    assert.equal(promQuery('sglang_kv_transfer_latency_ms_mean', 10), 'rate(sglang:kv_transfer_latency_ms_sum[20s]) / rate(sglang:kv_transfer_latency_ms_count[20s])');
    assert.equal(stepFor(0, 14400, 2000), 8);
    assert.ok(14400 / stepFor(0, 14400, 2000) + 1 <= 2000);
    assert.equal(stepFor(0, 10, 2000), 1);
  });
});
