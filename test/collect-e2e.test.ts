// End to end on loopback: the Python client (three steps of phases on several ranks, metrics,
// trajectories, topology), a GPU sampler reading a stand-in nvidia-smi, a stand-in SGLang engine
// scraped by the collector, the collector writing, and the server answering what was sent.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startCollectorService } from '../src/collect/service.ts';
import { TelemetryStore } from '../src/run/telemetry/store.ts';
import { openRun } from '../src/commands/openRun.ts';
import { startServer } from '../src/server/listen.ts';
import { fakeEngine } from './support/fakeSglang.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = mkdtempSync(join(tmpdir(), 'rlsight-e2e-'));
after(() => rmSync(root, { recursive: true, force: true }));

function runDriver(runDir: string, engine: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn('python3', [join(REPO, 'test', 'support', 'e2e_driver.py'), runDir, engine], { cwd: REPO, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('exit', (code) => done({ code, out, err }));
  });
}

describe('live telemetry end to end', () => {
  it('every record the trainer sent is read back, with the same values', async () => {
    const runDir = join(root, 'run');
    const dash = join(runDir, 'dashboard');
    const engine = await fakeEngine();
    const svc = await startCollectorService({ dashboardDir: dash, port: 0, flushIntervalS: 0.2, runName: 'e2e', log: () => {}, sglang: { mode: 'auto', intervalS: 0.5 } });
    let driven;
    try {
      driven = await runDriver(runDir, engine.addr);
      assert.equal(driven.code, 0, driven.err);
      // the scraper ticks every 0.5 s once the topology names the engine
      for (let i = 0; i < 100 && !(existsSync(join(dash, 'engine_series')) && readdirSync(join(dash, 'engine_series')).length > 0); i++) await new Promise((r) => setTimeout(r, 100));
    } finally {
      assert.equal(await svc.close(), true);
      await engine.close();
    }
    const report = JSON.parse(driven.out.trim().split('\n').at(-1)!);
    console.log(`python client: worst call ${report.worst_call_us.toFixed(1)} us; ${JSON.stringify(report.stats)}`);
    assert.equal(report.closed_ok, true);
    assert.equal(report.stats.dropped, 0);
    assert.equal(report.stats.rejected, 0);

    const store = TelemetryStore.open(dash, { parseWorkers: 0 });
    try {
      assert.deepEqual(store.warnings(), []);
      assert.equal(store.meta()!.run_name, 'e2e');
      const metrics = store.metricsRecords();
      assert.deepEqual(metrics.map((m) => m.metrics), report.sent.metrics);
      assert.deepEqual(metrics.map((m) => [m.step_key, m.step]), [['train/step', 0], ['train/step', 1], ['train/step', 2]]);
      const phases = store.phaseEvents();
      assert.equal(phases.length, report.sent.phases);
      const closedTrain = phases.filter((p) => p.name === 'actor_train' && p.t1 !== -1);
      const want = [0, 1, 2].flatMap(() => [0, 1, 2, 3].map((r) => [r, r, '10.0.0.1', 'train']));
      assert.deepEqual(closedTrain.map((p) => [p.rank, p.gpus[0], p.node, p.role]).sort(), want.sort());
      for (const p of phases.filter((x) => x.t1 === -1)) assert.ok(phases.some((q) => q.t1 !== -1 && q.t0 === p.t0 && q.name === p.name && q.rank === p.rank), 'every open marker has its closing twin');
      assert.equal(store.trajectoryEvents().length, report.sent.trajectories);
      assert.deepEqual(store.dataBufferSamples().map((d) => d.length), [10, 9, 8]);
      const topo = store.topologySnapshots();
      assert.equal(topo.length, 1);
      assert.deepEqual(topo[0].engines[0].gpus, [['10.0.0.1', 0], ['10.0.0.1', 1]]);
      // the stand-in nvidia-smi's readings, per GPU (gpu 3 reads [N/A] power: -1, unknown)
      const gpu = new Map<number, number[]>();
      for (const b of store.gpuUtilBlocks()) {
        for (let i = 0; i < b.length; i++) {
          assert.equal(store.lanes.node(b.lane[i]), '10.0.0.1');
          gpu.set(store.lanes.gpu(b.lane[i]), [b.util[i], b.memMb(i), b.powerW(i)]);
        }
      }
      assert.deepEqual([...gpu.entries()].sort(), [[0, [10, 40000, 300]], [1, [30, 40001, 301]], [2, [50, 40002, 302]], [3, [70, 40003, -1]]]);
      const procs = store.gpuProcessRows();
      assert.ok(procs.some((p) => p.gpu === 1 && p.pid === 4001 && p.name === 'sglang::scheduler' && p.mem_mb === 30001));
      // the stand-in engine, scraped by the collector
      const running = [];
      for (const b of store.engineSeriesBlocks()) {
        for (let i = 0; i < b.length; i++) {
          const k = store.engineSeries.key(b.series[i]);
          if (k.metric === 'sglang_num_running_reqs') running.push([k.addr, k.labelsJson, b.value[i]]);
        }
      }
      assert.ok(running.length >= 2);
      assert.deepEqual(running.slice(0, 2), [
        [engine.addr, '{"dp_rank":"0","engine_type":"unified"}', 16],
        [engine.addr, '{"dp_rank":"1","engine_type":"unified"}', 5],
      ]);
      const lanes = store.laneIndex();
      assert.deepEqual(lanes.map((l) => [l.gpu, l.ranks, l.roles]), [[0, [0], ['rollout', 'train']], [1, [1], ['rollout', 'train']], [2, [2], ['train']], [3, [3], ['train']]]);
    } finally {
      store.close();
    }

    // and the app's server (live mode) answers over the same directory
    const server = await startServer(await openRun(runDir), { port: 0, follow: true, followTimer: false });
    try {
      const meta = (await (await fetch(new URL('/api/meta', server.url))).json()) as { run_name?: string };
      assert.equal(meta.run_name, 'e2e');
      const metricsRes = await fetch(new URL('/api/metrics?keys=train/loss&x=train/step', server.url));
      assert.equal(metricsRes.status, 200);
      const series = ((await metricsRes.json()) as Record<string, { x: number[]; y: number[] }>)["train/loss"];
      assert.deepEqual([series.x, series.y], [[0, 1, 2], [1.5, 1.25, 1.0]]);
    } finally {
      await server.close();
    }
  });
});
