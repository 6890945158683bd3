// The collector end to end in-process: batches over HTTP, files on disk, the store reading them back.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, it } from 'node:test';
import { fixturePath } from '../../test/support/fixtures.ts';
import { COLLECTOR_FILE, decodeLine, type StreamName } from '../formats/dashboard/index.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { Collector, type LogLevel } from './collector.ts';
import { readCollectorFile } from './collectorFile.ts';
import { nodeCollectorFs, type CollectorFs } from '../formats/dashboard/writer.ts';
import { startCollectorService, type CollectorService } from './service.ts';
import { createCollectorApp } from './http.ts';
import { gzipSync } from 'node:zlib';

const root = mkdtempSync(join(tmpdir(), 'rlsight-collect-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = (): string => join(root, `run${n++}`, 'dashboard');

const fixture = fixturePath('miles-demo', 'run', 'dashboard');

/** Every stream file of a dashboard directory, relative path → bytes. */
function streamFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.jsonl')) out.set(relative(dir, p).replaceAll('\\', '/'), readFileSync(p, 'utf8'));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

const streamOfFile = (rel: string): StreamName => (rel.includes('/') ? rel.split('/')[0] : rel.replace('.jsonl', '')) as StreamName;

async function post(svc: CollectorService, stream: string, body: string, token: string | null = svc.token): Promise<{ status: number; json: any }> {
  const res = await fetch(`${svc.address}/v1/streams/${stream}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-ndjson', ...(token === null ? {} : { Authorization: `Bearer ${token}` }) },
    body,
  });
  return { status: res.status, json: await res.json() };
}

function captureLog(): { lines: string[]; log: (level: LogLevel, m: string) => void } {
  const lines: string[] = [];
  return { lines, log: (level, m) => lines.push(`${level}: ${m}`) };
}

describe('collector', () => {
  it('writes what miles wrote: the fixture replayed over HTTP comes out byte for byte, and the store reads it', async () => {
    const dir = freshDir();
    const { log } = captureLog();
    const svc = await startCollectorService({ dashboardDir: dir, port: 0, flushIntervalS: 3600, runName: 'dummy-telemetry', log });
    try {
      const info = readCollectorFile(dir);
      assert.equal(info.address, svc.address);
      assert.equal(info.token, svc.token);
      assert.equal(statSync(join(dir, COLLECTOR_FILE)).mode & 0o777, 0o600);
      const want = streamFiles(fixture);
      // topology first: engines the scraper saw before any snapshot would be kept as external
      const order = [...want.keys()].sort((x, y) => Number(y === 'topology.jsonl') - Number(x === 'topology.jsonl'));
      for (const rel of order) {
        const text = want.get(rel)!;
        const lines = text.trimEnd().split('\n');
        // in batches of 64, as producers send them
        for (let i = 0; i < lines.length; i += 64) {
          const r = await post(svc, streamOfFile(rel), lines.slice(i, i + 64).join('\n') + '\n');
          assert.equal(r.status, 200, JSON.stringify(r.json));
          assert.equal(r.json.accepted, Math.min(64, lines.length - i));
        }
      }
      assert.equal(svc.collector.flush(), true);
      const got = streamFiles(dir);
      assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
      for (const [rel, text] of want) assert.equal(got.get(rel), text, rel);
      assert.equal(readFileSync(join(dir, 'lane_catalog.json'), 'utf8'), readFileSync(join(fixture, 'lane_catalog.json'), 'utf8'));
      const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8'));
      assert.equal(meta.run_name, 'dummy-telemetry');
      assert.equal(meta.schema_version, 1);

      const a = TelemetryStore.open(dir, { parseWorkers: 0 });
      const b = TelemetryStore.open(fixture, { parseWorkers: 0 });
      try {
        assert.deepEqual(a.warnings(), []);
        assert.deepEqual(a.metricsRecords(), b.metricsRecords());
        assert.deepEqual(a.topologySnapshots(), b.topologySnapshots());
        assert.deepEqual(a.phaseEvents(), b.phaseEvents());
        assert.deepEqual(a.trajectoryEvents(), b.trajectoryEvents());
        assert.deepEqual(a.laneIndex(), b.laneIndex());
        const rows = (s: TelemetryStore) => s.gpuUtilBlocks().flatMap((blk) => Array.from({ length: blk.length }, (_, i) => [blk.ts[i], s.lanes.key(blk.lane[i]), blk.util[i], blk.memMb(i), blk.powerW(i)]));
        assert.deepEqual(rows(a), rows(b));
      } finally {
        a.close();
        b.close();
      }
      const h = svc.collector.health();
      assert.equal(h.streams.gpu_util.written, 1320);
      assert.equal(h.streams.gpu_util.buffered, 0);
      assert.equal(h.flushErrors, 0);
    } finally {
      assert.equal(await svc.close(), true);
    }
    assert.equal(existsSync(join(dir, COLLECTOR_FILE)), false, 'collector.json is removed on a clean stop');
  });

  it('drops a bad line and keeps the rest of its batch, counting it; takes a fractional power_w', async () => {
    const dir = freshDir();
    const svc = await startCollectorService({ dashboardDir: dir, port: 0, flushIntervalS: 3600, log: captureLog().log });
    try {
      const good = '{"ts":1000000.0,"node":"10.0.0.1","gpu":0,"util":20,"mem_mb":30000,"power_w":300}';
      const fractional = '{"ts":1000001.0,"node":"10.0.0.1","gpu":0,"util":21,"mem_mb":30000,"power_w":287.43}';
      const r = await post(svc, 'gpu_util', `${good}\n{"ts":1000000.0,"node":"10.0.0.1","gpu":1,"util":"high","mem_mb":1,"power_w":1}\n${fractional}\n`);
      assert.equal(r.status, 200);
      assert.equal(r.json.accepted, 2);
      assert.equal(r.json.rejected, 1);
      assert.match(r.json.problems[0], /gpu_util line 2, field util: expected an integer/);
      assert.equal(svc.collector.flush(), true);
      assert.deepEqual([...streamFiles(dir).values()], [`${good}\n${fractional}\n`]);
      assert.equal(svc.collector.health().streams.gpu_util.rejected, 1);
    } finally {
      await svc.close();
    }
  });

  it('exposes the rollout samples it took, left out, wrote and still waits for', async () => {
    const dir = freshDir();
    const svc = await startCollectorService({ dashboardDir: dir, port: 0, flushIntervalS: 3600, log: captureLog().log });
    try {
      const line = (rolloutId: number, count: number, position: number) => JSON.stringify({ rollout_id: rolloutId, evaluation: false, call: `c${rolloutId}`, count, position, sample: { index: position, reward: 1 } });
      const r = await post(svc, 'samples', [line(0, 2, 0), line(0, 2, 1), line(1, 3, 0), '{"rollout_id":-1}'].join('\n'));
      assert.deepEqual([r.status, r.json.accepted, r.json.rejected], [200, 3, 1]);
      const text = await (await fetch(`${svc.address}/metrics`)).text();
      const figure = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
      assert.deepEqual(
        ['samples_received_total', 'samples_rejected_total', 'sample_steps_written_total', 'sample_step_write_errors_total', 'sample_steps_arriving'].map((n) => figure(`rlsight_collector_${n}`)),
        [3, 1, 1, 0, 1],
      );
    } finally {
      await svc.close();
    }
  });

  it('refuses batches with no good line, oversized and unauthenticated ones with nothing written', async () => {
    const dir = freshDir();
    const svc = await startCollectorService({ dashboardDir: dir, port: 0, flushIntervalS: 3600, maxBatchBytes: 4096, log: captureLog().log });
    try {
      const good = '{"ts":1000000.0,"node":"10.0.0.1","gpu":0,"util":20,"mem_mb":30000,"power_w":300}';
      let r = await post(svc, 'gpu_util', `{"ts":1000000.0,"node":"10.0.0.1","gpu":1,"util":"high","mem_mb":1,"power_w":1}\n`);
      assert.equal(r.status, 400);
      assert.equal(r.json.line, 1);
      assert.equal(r.json.field, 'util');
      assert.match(r.json.error, /gpu_util line 1, field util: expected an integer/);
      r = await post(svc, 'phases', '{"name":"x","t0":1.0,"t1":2.0,"node":"n","gpus":[0],"rank":0}\n');
      assert.equal(r.status, 400);
      assert.match(r.json.error, /field role: missing/);
      r = await post(svc, 'metrics', '{"ts":1.0,"step_key":null,"step":null,"metrics":{}} trailing\n');
      assert.equal(r.status, 400);
      assert.match(r.json.error, /line 1: not JSON/);
      r = await post(svc, 'gpu_util', `${good}\n`.repeat(100));
      assert.equal(r.status, 413);
      assert.match(r.json.error, /larger than 4096 bytes/);
      r = await post(svc, 'gpu_util', `${good}\n`, null);
      assert.equal(r.status, 401);
      assert.match(r.json.error, /collector.json/);
      r = await post(svc, 'gpu_util', `${good}\n`, 'x'.repeat(43));
      assert.equal(r.status, 401);
      r = await post(svc, 'gpu_utilz', `${good}\n`);
      assert.equal(r.status, 404);
      assert.match(r.json.error, /unknown stream 'gpu_utilz'/);
      const bad = await fetch(`${svc.address}/v1/streams/gpu_util`, { method: 'POST', headers: { Authorization: `Bearer ${svc.token}` }, body: Buffer.from([0xff, 0xfe, 0x0a]) });
      assert.equal(bad.status, 400);
      assert.equal(svc.collector.flush(), true);
      assert.deepEqual([...streamFiles(dir).keys()], []);
      const h = svc.collector.health();
      assert.equal(h.streams.gpu_util.received, 0);
    } finally {
      await svc.close();
    }
  });

  it('answers what a hand-written producer sends: a lower-case scheme, a gzip body, an empty batch, a fractional step', async () => {
    const dir = freshDir();
    const collector = new Collector({ dashboardDir: dir, log: captureLog().log });
    const app = createCollectorApp(collector, { token: 'secret', maxBatchBytes: 4096 });
    const send = async (body: string | Uint8Array, headers: Record<string, string> = {}) => {
      const res = await app.request('/v1/streams/metrics', { method: 'POST', headers: { Authorization: 'Bearer secret', ...headers }, body });
      return { status: res.status, json: (await res.json()) as { error?: string; accepted?: number; rejected?: number } };
    };
    const metric = (step: number) => `{"ts":1000000.0,"step_key":"train/step","step":${step},"metrics":{"loss":0.5}}`;
    assert.deepEqual(await send(`${metric(1)}\n`, { Authorization: 'bearer secret' }), { status: 200, json: { accepted: 1, rejected: 0 } });
    assert.deepEqual(await send(gzipSync(`${metric(2)}\n${metric(3)}\n`), { 'Content-Encoding': 'gzip' }), { status: 200, json: { accepted: 2, rejected: 0 } });
    // the bound holds for the decompressed batch (this one is small compressed)
    const big = await send(gzipSync(`${metric(4)}\n`.repeat(200)), { 'Content-Encoding': 'gzip' });
    assert.equal(big.status, 413);
    assert.match(big.json.error!, /larger than 4096 bytes once decompressed/);
    const br = await send(`${metric(5)}\n`, { 'Content-Encoding': 'br' });
    assert.equal(br.status, 415);
    assert.match(br.json.error!, /Content-Encoding: br is not accepted; send the batch uncompressed or as gzip/);
    for (const empty of ['', '\n\n']) {
      const r = await send(empty);
      assert.equal(r.status, 400);
      assert.match(r.json.error!, /^empty batch/);
    }
    // a batch number a double cannot hold exactly is refused, naming the header (2^53 + 1 would pass for 2^53)
    const huge = await send(`${metric(6)}\n`, { 'X-Rlsight-Batch': 'p/9007199254740993' });
    assert.equal(huge.status, 400);
    assert.equal(huge.json.error, 'X-Rlsight-Batch: the batch number 9007199254740993 is above 2^53 - 1 (9007199254740991); number batches from a smaller start');
    assert.equal((await send(`${metric(6)}\n`, { 'X-Rlsight-Batch': 'p/9007199254740991' })).status, 200);
    // the producer '-' names the collector's own lines (never taken for a retry): a producer's retry would be taken twice
    const own = await send(`${metric(7)}\n`, { 'X-Rlsight-Batch': '-/1' });
    assert.equal(own.status, 400);
    assert.match(own.json.error!, /^X-Rlsight-Batch: the producer '-' is the collector's own/);
    const frac = await send(`${metric(1.5)}\n`);
    assert.equal(frac.status, 400);
    assert.equal(frac.json.error, 'metrics line 1, field step: expected an integer or null');
    assert.equal(collector.close(), true);
    assert.deepEqual(readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trimEnd().split('\n').length, 4);
  });

  it('keeps records through write failures, says so on every flush, and bounds what it holds', () => {
    const dir = freshDir();
    const { lines, log } = captureLog();
    let failing = true;
    let partial = true;
    const fs: CollectorFs = {
      ...nodeCollectorFs,
      write: (fd, data) => {
        if (failing) {
          // half a write reaches the disk before it fills up
          if (partial) nodeCollectorFs.write(fd, data.subarray(0, Math.floor(data.length / 2)));
          throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
        }
        nodeCollectorFs.write(fd, data);
      },
    };
    const c = new Collector({ dashboardDir: dir, bufferCap: 100, log, fs });
    const line = (i: number) => `{"ts":${1000000 + i}.0,"node":"10.0.0.1","gpu":0,"util":${i % 101},"mem_mb":1,"power_w":1}`;
    const sent: string[] = [];
    for (let k = 0; k < 3; k++) {
      const batch = Array.from({ length: 40 }, (_, i) => line(k * 40 + i));
      sent.push(...batch);
      assert.equal(c.ingest('gpu_util', batch.join('\n')).ok, true);
      assert.equal(c.flush(), false);
      partial = !partial;
    }
    const failures = lines.filter((l) => /flush to .* failed for gpu_util \(ENOSPC/.test(l));
    assert.equal(failures.length, 3, lines.join('\n'));
    assert.match(failures[0], /still held: gpu_util 40 records/);
    assert.match(failures[2], /still held: gpu_util 100 records/);
    assert.ok(lines.some((l) => /^error: dropped 20 gpu_util records since the last flush/.test(l)), lines.join('\n'));
    const h = c.health();
    assert.equal(h.flushErrors, 3);
    assert.equal(h.streams.gpu_util.dropped, 20);
    assert.equal(h.streams.gpu_util.buffered, 100);
    // every file still ends at a line boundary
    for (const [, text] of streamFiles(dir)) assert.ok(text === '' || text.endsWith('\n'));
    failing = false;
    assert.equal(c.flush(), true);
    const written = [...streamFiles(dir).values()].join('').trimEnd().split('\n');
    // what is lost is the oldest records beyond the cap, and nothing else
    assert.deepEqual(written, sent.slice(20));
    assert.equal(c.health().streams.gpu_util.written, 100);
  });

  it('cuts a torn tail before appending, so every line after a crash is whole', () => {
    const dir = freshDir();
    mkdirSync(join(dir, 'gpu_util'), { recursive: true });
    const whole = '{"ts":3600.0,"node":"n","gpu":0,"util":1,"mem_mb":1,"power_w":1}\n';
    writeFileSync(join(dir, 'gpu_util', '19700101_01.jsonl'), whole + '{"ts":3601.0,"node":"n","gp');
    writeFileSync(join(dir, 'metrics.jsonl'), '{"ts":1.0,"step_k');
    const { lines, log } = captureLog();
    const c = new Collector({ dashboardDir: dir, log });
    assert.equal(c.ingest('gpu_util', '{"ts":3602.0,"node":"n","gpu":0,"util":2,"mem_mb":1,"power_w":1}').ok, true);
    assert.equal(c.ingest('metrics', '{"ts":2.0,"step_key":"train/step","step":1,"metrics":{"train/loss":1.0,"train/step":1}}').ok, true);
    assert.equal(c.flush(), true);
    assert.equal(readFileSync(join(dir, 'gpu_util', '19700101_01.jsonl'), 'utf8'), whole + '{"ts":3602.0,"node":"n","gpu":0,"util":2,"mem_mb":1,"power_w":1}\n');
    assert.equal(readFileSync(join(dir, 'metrics.jsonl'), 'utf8'), '{"ts":2.0,"step_key":"train/step","step":1,"metrics":{"train/loss":1.0,"train/step":1}}\n');
    assert.equal(lines.filter((l) => /cut \d+ bytes of an unfinished last line/.test(l)).length, 2);
    assert.equal(c.health().tornTailsCut, 2);
  });

  it('keeps the run start and the lane catalog across a restart, and files phases by end hour', () => {
    const dir = freshDir();
    const first = new Collector({ dashboardDir: dir, runName: 'r', now: () => 5000 });
    first.ingest('phases', '{"name":"actor_train","t0":3599.0,"t1":3601.0,"node":"10.0.0.1","gpus":[0],"rank":0,"role":"train"}\n{"name":"train_wait","t0":3500.0,"t1":-1.0,"node":"10.0.0.1","gpus":[0],"rank":0,"role":"train"}');
    assert.equal(first.close(), true);
    // beside each hour's partition, its parsed columns (rlsight's own file, see hourColumns.ts)
    assert.deepEqual(readdirSync(join(dir, 'phases')).sort(), ['19700101_00.cols.rlc', '19700101_00.jsonl', '19700101_01.cols.rlc', '19700101_01.jsonl']);
    assert.match(readFileSync(join(dir, 'phases', '19700101_00.jsonl'), 'utf8'), /"t1":-1.0/);
    const second = new Collector({ dashboardDir: dir, now: () => 9000 });
    assert.equal(second.meta.start_ts, 5000);
    assert.equal(second.meta.run_name, 'r');
    second.ingest('gpu_util', '{"ts":9000.0,"node":"10.0.0.1","gpu":1,"util":1,"mem_mb":1,"power_w":1}');
    assert.equal(second.close(), true);
    const catalog = JSON.parse(readFileSync(join(dir, 'lane_catalog.json'), 'utf8'));
    assert.deepEqual(catalog.lanes, { '10.0.0.1:0': { ranks: [0], engine_addrs: [], roles: ['train'] }, '10.0.0.1:1': { ranks: [], engine_addrs: [], roles: [] } });
  });

  it('takes a metrics step beyond 2^53 rounded to the nearest double, says so once, and serve reads it back saying so once', () => {
    const dir = freshDir();
    const logged: string[] = [];
    const c = new Collector({ dashboardDir: dir, now: () => 10, log: (level, m) => logged.push(`${level}: ${m}`) });
    // a TensorBoard global step as a trainer logs it (Python writes the int's digits)
    const line = (ts: number, step: string) => `{"ts":${ts}.0,"step_key":"tensorboard/step","step":${step},"metrics":{"c/huge":1.0}}`;
    const r = c.ingest('metrics', [line(1, '9007199254740993'), line(2, '9007199254740995'), line(3, '7')].join('\n'));
    assert.ok(r.ok);
    assert.deepEqual([r.accepted, r.rejected], [3, 0]);
    assert.ok(c.ingest('metrics', line(4, '18014398509481985')).ok);
    assert.equal(c.close(), true);
    const big = logged.filter((l) => /beyond 2\^53/.test(l));
    assert.deepEqual(big, [`warn: ${join(dir, 'metrics.jsonl')}: a metrics record's step 9007199254740992 is beyond 2^53, read as the nearest double (steps this large are rounded; later ones are not reported)`]);
    assert.deepEqual(
      readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trimEnd().split('\n'),
      [line(1, '9007199254740992'), line(2, '9007199254740996'), line(3, '7'), line(4, '18014398509481984')],
    );
    const store = TelemetryStore.open(dir, { parseWorkers: 0 });
    try {
      assert.deepEqual(store.metricsRecords().map((m) => m.step), [9007199254740992, 9007199254740996, 7, 18014398509481984]);
      assert.deepEqual(
        store.warnings().map((w) => w.message),
        ['step 9007199254740992 is beyond 2^53, read as the nearest double (steps this large are rounded; later ones are not reported)'],
      );
    } finally {
      store.close();
    }
  });

  it('records a topology only when its engines change, and keeps scraped-only engines as external', () => {
    const dir = freshDir();
    const c = new Collector({ dashboardDir: dir, now: () => 10 });
    const snap = (ts: number, addr: string) => `{"ts":${ts}.0,"engines":[{"addr":"${addr}","worker_type":"regular","engine_rank":0,"gpus":[["10.0.0.1",0]],"gpu_uuids":[null]}]}`;
    c.ingest('topology', [snap(1, 'http://10.0.0.1:15000'), snap(2, 'http://10.0.0.1:15000'), snap(3, 'http://10.0.0.1:15004')].join('\n'));
    c.ingest('engine_series', '{"ts":4.0,"addr":"http://10.1.0.5:15000","metric":"sglang_num_running_reqs","labels":{},"value":3.0}');
    c.syncExternalEngines();
    c.syncExternalEngines();
    assert.equal(c.close(), true);
    const lines = readFileSync(join(dir, 'topology.jsonl'), 'utf8').trimEnd().split('\n');
    assert.deepEqual(lines.map((l) => JSON.parse(l).ts), [1, 3, 10]);
    const last = decodeLine('topology', lines[2]);
    assert.ok(last.ok);
    assert.deepEqual(last.record.engines.map((e) => [e.addr, e.worker_type]), [['http://10.0.0.1:15004', 'regular'], ['http://10.1.0.5:15000', 'external']]);
    assert.deepEqual(c.engineAddrs(), ['http://10.0.0.1:15004', 'http://10.1.0.5:15000']);
  });
});
