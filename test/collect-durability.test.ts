// `rlsight collect` killed with SIGKILL (its whole process group) while producers send: every batch it
// acknowledged is served afterwards, exactly once, whatever the moment of the kill.
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { TelemetryStore } from '../src/run/telemetry/store.ts';
import { SeededRandom } from '../src/demo/random.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { killCollectorGroup, startCollectProcess, type RunningCollector } from './support/collectProcess.ts';

ensureCliBuilt();

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = mkdtempSync(join(tmpdir(), 'rlsight-durable-'));
const started: ChildProcess[] = [];
after(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) killCollectorGroup(c);
  rmSync(root, { recursive: true, force: true });
});

type Running = RunningCollector;

const startCollect = (runDir: string, flushInterval: string): Promise<Running> => startCollectProcess(runDir, { flushInterval, started });

async function kill9(c: Running): Promise<void> {
  killCollectorGroup(c.child);
  await c.exited;
}

const metricLine = (step: number): string => `{"ts":${1_755_799_200 + step}.25,"step_key":"train/step","step":${step},"metrics":{"train/loss":0.5,"train/step":${step}}}`;

describe('rlsight collect on a directory it cannot write', () => {
  it('fails at once with a message naming the directory', () => {
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    for (const dir of ['/proc/x', join(file, 'run')]) {
      const r = spawnSync(process.execPath, [RLSIGHT_BIN, 'collect', '--dump-details', dir, '--listen', '127.0.0.1:0'], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 2, `${dir}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, new RegExp(`rlsight collect: cannot write ${dir.replaceAll('/', '\\/')}\\/dashboard: (ENOENT|ENOTDIR)`));
    }
  });
});

describe('rlsight collect under kill -9', () => {
  it('serves every acknowledged record exactly once after kills at random moments under a steady stream', async () => {
    const runDir = join(root, 'random');
    const seed = Number(process.env.RLSIGHT_KILL_SEED ?? Date.now() % 100000);
    console.log(`kill schedule seed ${seed} (RLSIGHT_KILL_SEED replays it)`);
    const random = new SeededRandom(seed);
    let collector = await startCollect(runDir, '0.2');
    const acked = new Set<number>();
    let stop = false;
    let retries = 0;
    // a producer speaking the collector's protocol: numbered batches, retried under the same number until acknowledged
    const producer = (async () => {
      const producerId = `p${seed}`;
      let seq = 0;
      let step = 0;
      while (!stop) {
        seq++;
        const steps = Array.from({ length: 50 }, () => step++);
        const body = steps.map(metricLine).join('\n') + '\n';
        for (;;) {
          try {
            const info = JSON.parse(readFileSync(join(runDir, 'dashboard', 'collector.json'), 'utf8'));
            const res = await fetch(`${info.address}/v1/streams/metrics`, {
              method: 'POST',
              headers: { Authorization: `Bearer ${info.token}`, 'X-Rlsight-Batch': `${producerId}/${seq}` },
              body,
              signal: AbortSignal.timeout(2000),
            });
            if (res.status === 200) {
              for (const s of steps) acked.add(s);
              break;
            }
          } catch {
            // collector down or collector.json being replaced
          }
          retries++;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    })();
    for (let k = 0; k < 4; k++) {
      await new Promise((r) => setTimeout(r, 150 + random.next() * 900));
      await kill9(collector);
      collector = await startCollect(runDir, '0.2');
    }
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await producer;
    collector.child.kill('SIGTERM');
    assert.equal(await collector.exited, 0, collector.output());
    console.log(`${acked.size} records acknowledged across 4 kills; ${retries} retried sends`);
    assert.ok(acked.size > 500, `the stream kept going (${acked.size} acknowledged)`);
    const store = TelemetryStore.open(join(runDir, 'dashboard'), { parseWorkers: 0 });
    try {
      assert.deepEqual(store.warnings(), []);
      const served = store.metricsRecords().map((m) => m.step!);
      assert.equal(new Set(served).size, served.length, 'no record served twice');
      const have = new Set(served);
      const missing = [...acked].filter((s) => !have.has(s));
      assert.deepEqual(missing.slice(0, 10), [], `${missing.length} acknowledged records lost`);
    } finally {
      store.close();
    }
  });

  it('keeps 20,000 client.log records a flush() acknowledged through a kill -9 with --flush-interval 600', async () => {
    const runDir = join(root, 'client');
    const first = await startCollect(runDir, '600');
    const py = spawnSync(
      'python3',
      [
        '-c',
        `import json, sys, rlsight
c = rlsight.connect(dump_details=sys.argv[1], node="10.0.0.1", gpus=[0], rank=0)
for i in range(20000):
    c.log({"train/loss": 1.0 / (i + 1), "train/step": i}, step=i, step_key="train/step")
ok = c.flush(60)
print(json.dumps({"flushed": ok, "stats": c.stats()}))`,
        runDir,
      ],
      { env: { ...process.env, PYTHONPATH: join(REPO, 'python'), PYTHONDONTWRITEBYTECODE: '1' }, encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(py.status, 0, py.stderr);
    const report = JSON.parse(py.stdout.trim().split('\n').at(-1)!);
    assert.equal(report.flushed, true);
    assert.equal(report.stats.sent, 20000);
    const metricsFile = join(runDir, 'dashboard', 'metrics.jsonl');
    await kill9(first);
    const second = await startCollect(runDir, '600');
    const lines = readFileSync(metricsFile, 'utf8').split('\n').filter((l) => l !== '');
    const steps = lines.map((l) => JSON.parse(l).step as number);
    assert.equal(steps.length, 20000, `${steps.length} lines in metrics.jsonl`);
    assert.equal(new Set(steps).size, 20000, 'each record exactly once');
    assert.match(second.output(), /replayed 20000 records/);
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0, second.output());
    assert.equal(readFileSync(metricsFile, 'utf8').split('\n').filter((l) => l !== '').length, 20000);
  });
});
