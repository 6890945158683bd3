// A real Prometheus server (Debian's `prometheus`) scrapes the collector's /metrics and the SGLang
// router's /engine_metrics with the config `rlsight prometheus-config` prints; its query API then
// answers the pushed GPU values and the collector's health counters.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { prometheusConfig } from '../src/commands/prometheusConfig.ts';
import { startCollectorService } from '../src/collect/service.ts';
import { defaultEngineState, routerMetricsText, serveText } from './support/fakeSglang.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-prom-'));
after(() => rmSync(root, { recursive: true, force: true }));

const haveProm = spawnSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' }).status === 0;
const inCi = !!process.env.CI && process.env.CI !== 'false';
const skip = !haveProm && !inCi ? 'the prometheus binary is not installed (apt-get install prometheus); CI installs it and runs this test' : false;

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

interface Vector {
  metric: Record<string, string>;
  value: [number, string];
}

async function query(base: string, q: string): Promise<Vector[]> {
  const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(q)}`);
  const doc = (await res.json()) as { status: string; data?: { result: Vector[] } };
  return doc.status === 'success' ? doc.data!.result : [];
}

/** Asks until `ok` holds for the answer (Prometheus scrapes every second). */
async function until(base: string, q: string, ok: (v: Vector[]) => boolean, what: string, log: () => string): Promise<Vector[]> {
  let last: Vector[] = [];
  for (let i = 0; i < 240; i++) {
    try {
      last = await query(base, q);
      if (ok(last)) return last;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: Prometheus never answered ${q} as expected; last ${JSON.stringify(last)}\n${log()}`);
}

describe('Prometheus scrapes the collector', { skip }, () => {
  it('answers the pushed GPU values, engine metrics and health counters', async () => {
    assert.ok(haveProm, 'CI must install prometheus (.ci/run does)');
    const router = await serveText({ '/engine_metrics': () => routerMetricsText([{ addr: 'http://10.0.0.1:15000', state: defaultEngineState() }]) });
    const svc = await startCollectorService({ dashboardDir: join(root, 'run', 'dashboard'), port: 0, flushIntervalS: 0.2, log: () => {} });
    const ts = Date.now() / 1000;
    const gpu = [];
    for (let g = 0; g < 4; g++) gpu.push(`{"ts":${ts.toFixed(3)},"node":"10.0.0.1","gpu":${g},"util":${10 + g * 20},"mem_mb":${40000 + g},"power_w":${300 + g}}`);
    let res = await fetch(`${svc.address}/v1/streams/gpu_util`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body: gpu.join('\n') });
    assert.equal(res.status, 200);
    res = await fetch(`${svc.address}/v1/streams/phases`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${svc.token}` },
      body: `{"name":"actor_train","t0":${ts - 60},"t1":${ts},"node":"10.0.0.1","gpus":[0],"rank":0,"role":"train"}`,
    });
    assert.equal(res.status, 200);

    const promPort = await freePort();
    const cfg = join(root, 'prometheus.yml');
    const collectorHost = new URL(svc.address).host;
    writeFileSync(cfg, prometheusConfig({ router: new URL(router.addr).host, collector: collectorHost, scrapeIntervalS: 1 }));
    const prom = spawn('prometheus', [`--config.file=${cfg}`, `--storage.tsdb.path=${join(root, 'tsdb')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let promLog = '';
    prom.stdout!.on('data', (d) => (promLog += d));
    prom.stderr!.on('data', (d) => (promLog += d));
    const base = `http://127.0.0.1:${promPort}`;
    try {
      const util = await until(base, 'rlsight_gpu_utilization_percent', (v) => v.length === 4, 'gpu util', () => promLog);
      assert.deepEqual(
        util.map((v) => [v.metric.node, v.metric.gpu, Number(v.value[1])]).sort(),
        [['10.0.0.1', '0', 10], ['10.0.0.1', '1', 30], ['10.0.0.1', '2', 50], ['10.0.0.1', '3', 70]],
      );
      const mem = await query(base, 'rlsight_gpu_memory_used_mib{gpu="3"}');
      assert.equal(Number(mem[0].value[1]), 40003);
      const phase = await query(base, 'rlsight_phase_last_duration_seconds{phase="actor_train"}');
      assert.ok(Math.abs(Number(phase[0].value[1]) - 60) < 1e-6);
      const received = await until(base, 'rlsight_collector_records_received_total{stream="gpu_util"}', (v) => v.length === 1 && Number(v[0].value[1]) === 4, 'received', () => promLog);
      assert.equal(received[0].metric.job, 'rlsight-collector');
      await until(base, 'rlsight_collector_records_written_total{stream="gpu_util"}', (v) => v.length === 1 && Number(v[0].value[1]) === 4, 'written', () => promLog);
      await until(base, 'rlsight_collector_flush_errors_total', (v) => v.length === 1 && Number(v[0].value[1]) === 0, 'flush errors', () => promLog);
      await until(base, 'rlsight_collector_last_flush_success_timestamp_seconds', (v) => v.length === 1 && Number(v[0].value[1]) >= ts - 1, 'last flush', () => promLog);
      const engine = await until(base, 'sglang_num_running_reqs', (v) => v.length === 2, 'router engine metrics', () => promLog);
      assert.deepEqual(engine.map((v) => [v.metric.job, v.metric.worker_addr, v.metric.dp_rank, Number(v.value[1])]).sort(), [
        ['sglang-router', 'http://10.0.0.1:15000', '0', 16],
        ['sglang-router', 'http://10.0.0.1:15000', '1', 5],
      ]);
    } finally {
      prom.kill('SIGTERM');
      await new Promise((r) => prom.once('exit', r));
      await svc.close();
      await router.close();
    }
  });
});
