// The collector's GET /metrics for GPUs: a power the GPU did not report (the sampler's power_w -1, from
// nvidia-smi's [N/A]) is left out, never exported as a value; its utilization and memory still are.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startCollectorService } from './service.ts';

const PYTHON_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'python');
const root = mkdtempSync(join(tmpdir(), 'rlsight-exposition-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** The `name{labels} value` samples of one metric in an exposition. */
function samples(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`));
}

describe('GPU gauges of GET /metrics', () => {
  it('leaves out the power of a GPU whose power_w marks it unknown', async () => {
    const svc = await startCollectorService({ dashboardDir: join(root, 'posted', 'dashboard'), port: 0, flushIntervalS: 3600, log: () => {} });
    try {
      const body = [0, 1].map((g) => `{"ts":1755800000.0,"node":"10.0.0.1","gpu":${g},"util":${50 + g},"mem_mb":${1000 + g},"power_w":${g === 1 ? -1 : 300}}`).join('\n');
      const res = await fetch(`${svc.address}/v1/streams/gpu_util`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body });
      assert.equal(res.status, 200);
      const text = await (await fetch(`${svc.address}/metrics`)).text();
      assert.deepEqual(samples(text, 'rlsight_gpu_power_watts'), ['rlsight_gpu_power_watts{node="10.0.0.1",gpu="0"} 300']);
      assert.deepEqual(samples(text, 'rlsight_gpu_utilization_percent'), ['rlsight_gpu_utilization_percent{node="10.0.0.1",gpu="0"} 50', 'rlsight_gpu_utilization_percent{node="10.0.0.1",gpu="1"} 51']);
      assert.deepEqual(samples(text, 'rlsight_gpu_memory_used_mib'), ['rlsight_gpu_memory_used_mib{node="10.0.0.1",gpu="0"} 1000', 'rlsight_gpu_memory_used_mib{node="10.0.0.1",gpu="1"} 1001']);
    } finally {
      await svc.close();
    }
  });

  it('end to end: nvidia-smi [N/A] through the GPU sampler command is recorded as unknown and not exported', async () => {
    const dash = join(root, 'sampled', 'dashboard');
    const svc = await startCollectorService({ dashboardDir: dash, port: 0, flushIntervalS: 3600, log: () => {} });
    try {
      // a stand-in nvidia-smi whose gpu 3 reads [N/A] for power.draw
      const smiDir = join(root, 'smi');
      mkdirSync(smiDir);
      const env = JSON.parse(
        execFileSync('python3', ['-c', 'import json, sys; from tests import fake_smi; print(json.dumps(fake_smi.install(sys.argv[1], gpus=4)))', smiDir], { cwd: PYTHON_DIR, encoding: 'utf8' }),
      ) as Record<string, string>;
      const code = "import sys; sys.modules['pynvml'] = None; sys.modules['amdsmi'] = None; from rlsight.gpu_sampler import main; raise SystemExit(main(sys.argv[1:]))";
      const child = spawn('python3', ['-c', code, '--collector', svc.address, '--token', svc.token, '--node', '10.0.0.7', '--interval', '0.1'], {
        cwd: PYTHON_DIR,
        env: { ...process.env, ...env, PYTHONPATH: PYTHON_DIR, PYTHONDONTWRITEBYTECODE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr!.on('data', (d) => (err += d));
      const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      for (let i = 0; i < 300 && !err.includes('sampling 4 GPU(s)'); i++) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 500));
      // it sends what it sampled as it stops
      child.kill('SIGTERM');
      assert.equal(await exited, 0, err);
      assert.match(err, /nvidia-smi reports no power draw for gpu 3 on 10\.0\.0\.7; power_w -1 marks it unknown/);
      const text = await (await fetch(`${svc.address}/metrics`)).text();
      assert.deepEqual(
        samples(text, 'rlsight_gpu_power_watts').map((l) => l.replace(/ .*/, '')),
        [0, 1, 2].map((g) => `rlsight_gpu_power_watts{node="10.0.0.7",gpu="${g}"}`),
      );
      assert.ok(samples(text, 'rlsight_gpu_utilization_percent').includes('rlsight_gpu_utilization_percent{node="10.0.0.7",gpu="3"} 70'), text);
      svc.collector.flush();
      const rows = readdirSync(join(dash, 'gpu_util'))
        .filter((f) => f.endsWith('.jsonl'))
        .flatMap((f) => readFileSync(join(dash, 'gpu_util', f), 'utf8').trimEnd().split('\n'))
        .map((l) => JSON.parse(l) as { gpu: number; power_w: number });
      assert.ok(rows.some((r) => r.gpu === 3));
      for (const r of rows) assert.equal(r.power_w, r.gpu === 3 ? -1 : 300 + r.gpu);
    } finally {
      await svc.close();
    }
  });
});

describe('stale latest values of GET /metrics', () => {
  it('leaves out an engine whose scrape fails or began more than 3 scrape intervals and the timeout ago, and a GPU silent for 30 s; their last times stay', async () => {
    let clock = 1_755_800_000;
    let engineUp = true;
    const engine = 'http://10.0.0.9:30000';
    const text = [
      '# TYPE sglang:num_running_reqs gauge',
      'sglang:num_running_reqs{dp_rank="0",engine_type="unified"} 5',
      'sglang:num_running_reqs{dp_rank="1",engine_type="unified"} 6',
      '',
    ].join('\n');
    const get = async (url: string): Promise<string> => {
      if (url !== `${engine}/metrics`) throw new Error(`unexpected ${url}`);
      if (!engineUp) throw new Error('HTTP 503');
      return text;
    };
    const svc = await startCollectorService({ dashboardDir: join(root, 'stale', 'dashboard'), port: 0, flushIntervalS: 3600, log: () => {}, now: () => clock, sglang: { mode: 'direct', intervalS: 3600, get } });
    const exposed = async (): Promise<string> => (await fetch(`${svc.address}/metrics`)).text();
    try {
      const topo = `{"ts":${clock}.0,"engines":[{"addr":"${engine}","worker_type":"regular","engine_rank":0,"gpus":[["10.0.0.9",0]],"gpu_uuids":[null]}]}`;
      assert.equal((await fetch(`${svc.address}/v1/streams/topology`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body: topo })).status, 200);
      const gpu = `{"ts":${clock}.0,"node":"10.0.0.9","gpu":0,"util":80,"mem_mb":1000,"power_w":300}`;
      assert.equal((await fetch(`${svc.address}/v1/streams/gpu_util`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body: gpu })).status, 200);
      await svc.scraper!.scrapeOnce(clock);
      let t = await exposed();
      assert.deepEqual(samples(t, 'rlsight_engine_running_requests'), [`rlsight_engine_running_requests{engine="${engine}"} 11`]);
      assert.deepEqual(samples(t, 'rlsight_engine_last_scrape_timestamp_seconds'), [`rlsight_engine_last_scrape_timestamp_seconds{engine="${engine}"} ${clock}`]);
      assert.deepEqual(samples(t, 'rlsight_gpu_utilization_percent'), ['rlsight_gpu_utilization_percent{node="10.0.0.9",gpu="0"} 80']);
      assert.deepEqual(samples(t, 'rlsight_gpu_last_sample_timestamp_seconds'), [`rlsight_gpu_last_sample_timestamp_seconds{node="10.0.0.9",gpu="0"} ${clock}`]);

      // the engine answers 503: gone from the gauge at once, its last good scrape still said
      const scraped = clock;
      clock += 1;
      engineUp = false;
      await svc.scraper!.scrapeOnce(clock);
      t = await exposed();
      assert.deepEqual(samples(t, 'rlsight_engine_running_requests'), []);
      assert.deepEqual(samples(t, 'rlsight_engine_last_scrape_timestamp_seconds'), [`rlsight_engine_last_scrape_timestamp_seconds{engine="${engine}"} ${scraped}`]);
      // read again: back
      engineUp = true;
      await svc.scraper!.scrapeOnce(clock);
      assert.deepEqual(samples(await exposed(), 'rlsight_engine_running_requests'), [`rlsight_engine_running_requests{engine="${engine}"} 11`]);

      // a slow engine still answering keeps its value: 3 × the 3600 s interval plus the 5 s scrape timeout
      clock += 3 * 3600 + 4;
      assert.deepEqual(samples(await exposed(), 'rlsight_engine_running_requests'), [`rlsight_engine_running_requests{engine="${engine}"} 11`]);
      // no scrape for longer, and no GPU sample for more than 30 s
      clock += 2;
      t = await exposed();
      assert.deepEqual(samples(t, 'rlsight_engine_running_requests'), []);
      assert.deepEqual(samples(t, 'rlsight_engine_last_scrape_timestamp_seconds'), [`rlsight_engine_last_scrape_timestamp_seconds{engine="${engine}"} ${clock - 3 * 3600 - 6}`]);
      for (const name of ['rlsight_gpu_utilization_percent', 'rlsight_gpu_memory_used_mib', 'rlsight_gpu_power_watts']) assert.deepEqual(samples(t, name), [], name);
      assert.deepEqual(samples(t, 'rlsight_gpu_last_sample_timestamp_seconds'), [`rlsight_gpu_last_sample_timestamp_seconds{node="10.0.0.9",gpu="0"} ${scraped}`]);
    } finally {
      await svc.close();
    }
  });
});
