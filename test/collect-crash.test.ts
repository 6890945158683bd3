// `rlsight collect` killed with SIGKILL mid-run and started again on the same directory: no
// partition is corrupt, everything flushed before the kill is still there, the run continues.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pyFloat } from '../src/formats/pythonJson.ts';
import { TelemetryStore } from '../src/run/telemetry/store.ts';
import { ensureCliBuilt, RLSIGHT_BIN } from './support/cli.ts';
import { killCollectorGroup, startCollectProcess, type RunningCollector } from './support/collectProcess.ts';

// bin/rlsight.mjs runs dist/ as built: rebuild it first when the sources are newer.
ensureCliBuilt();

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = mkdtempSync(join(tmpdir(), 'rlsight-crash-'));
/** Every process the test starts: none outlives it, whether it passes or fails. */
const started: ChildProcess[] = [];
after(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) killCollectorGroup(c);
  rmSync(root, { recursive: true, force: true });
});

type Running = RunningCollector;

const startCollect = (runDir: string, previousPid?: number): Promise<Running> => startCollectProcess(runDir, { flushInterval: '0.1', started, previousPid });

const BASE = 1_755_799_200;
const line = (i: number) => `{"ts":${pyFloat(BASE + i * 0.5)},"node":"10.0.0.1","gpu":${i % 8},"util":${i % 101},"mem_mb":${1000 + i},"power_w":300}`;

async function push(c: Running, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += 100) {
    const body = Array.from({ length: Math.min(100, to - i) }, (_, k) => line(i + k)).join('\n') + '\n';
    const res = await fetch(`${c.address}/v1/streams/gpu_util`, { method: 'POST', headers: { Authorization: `Bearer ${c.token}` }, body });
    assert.equal(res.status, 200, await res.text());
  }
}

const partitions = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();

function writtenLines(dash: string): string[] {
  const dir = join(dash, 'gpu_util');
  if (!existsSync(dir)) return [];
  // the partitions only (the collector also keeps rlsight's rollups beside them)
  return partitions(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => l !== ''));
}

describe('rlsight collect after SIGKILL', () => {
  it('restarts on the same files without corrupting a partition or losing what was flushed', async () => {
    const runDir = join(root, 'run');
    const dash = join(runDir, 'dashboard');
    const first = await startCollect(runDir);
    // a trainer logging through the Python client the whole time, across the kill and the restart
    const stopFile = join(root, 'stop');
    const trainer = spawn('python3', [join(REPO, 'test', 'support', 'crash_client.py'), runDir, stopFile], { env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    started.push(trainer);
    let trainerOut = '';
    trainer.stdout.on('data', (d) => (trainerOut += d));
    trainer.stderr.on('data', (d) => (trainerOut += d));
    const trainerDone = new Promise<number | null>((r) => trainer.once('exit', (code) => r(code)));
    await push(first, 0, 3000);
    for (let i = 0; i < 400 && writtenLines(dash).length < 3000; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(writtenLines(dash).length, 3000, 'first batches flushed before the kill');
    await push(first, 3000, 6000);
    first.child.kill('SIGKILL');
    assert.equal(await first.exited, null);
    // a write the kill interrupted leaves half a line behind
    const hours = partitions(join(dash, 'gpu_util'));
    appendFileSync(join(dash, 'gpu_util', hours.at(-1)!), line(99999).slice(0, 37));

    const second = await startCollect(runDir, first.child.pid);
    await push(second, 6000, 9000);
    await new Promise((r) => setTimeout(r, 1000)); // the trainer finds the new collector
    writeFileSync(stopFile, '');
    assert.equal(await trainerDone, 0, trainerOut);
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0, second.output());
    assert.match(second.output(), /SIGTERM, flushing and stopping/);
    assert.match(second.output(), /cut 37 bytes of an unfinished last line/);
    assert.equal(existsSync(join(dash, 'collector.json')), false);

    const lines = writtenLines(dash);
    const all = new Set(lines);
    assert.equal(all.size, lines.length, 'no record written twice');
    for (let i = 0; i < 3000; i++) assert.ok(all.has(line(i)), `flushed before the kill: ${i}`);
    for (let i = 6000; i < 9000; i++) assert.ok(all.has(line(i)), `sent after the restart: ${i}`);
    const report = JSON.parse(trainerOut.trim().split('\n').at(-1)!);
    console.log(`python client across the kill: worst call ${report.worst_call_us.toFixed(1)} us over ${report.steps} steps; ${JSON.stringify(report.stats)}`);
    assert.equal(report.closed_ok, true, 'the client delivered everything it held once the collector was back');
    const store = TelemetryStore.open(dash, { parseWorkers: 0 });
    try {
      assert.deepEqual(store.warnings(), [], 'every partition reads clean');
      const steps = store.metricsRecords().map((m) => m.step!);
      assert.equal(new Set(steps).size, steps.length, 'no metric record written twice');
      assert.ok(steps.includes(report.steps - 1), 'the last step logged after the restart is there');
      assert.ok(steps.every((x) => x >= 0 && x < report.steps));
      const rows = store.gpuUtilBlocks().reduce((n, b) => n + b.length, 0);
      assert.equal(rows, lines.length);
    } finally {
      store.close();
    }
  });

  it('refuses a second collector on a run another one still writes, leaving that one and its files alone', async () => {
    const runDir = join(root, 'run-twice');
    const dash = join(runDir, 'dashboard');
    const first = await startCollect(runDir);
    await push(first, 0, 200);
    const infoBefore = readFileSync(join(dash, 'collector.json'), 'utf8');
    const twice = spawnSync(process.execPath, [RLSIGHT_BIN, 'collect', '--dump-details', runDir, '--listen', '127.0.0.1:0'], { cwd: REPO, encoding: 'utf8', timeout: 20_000 });
    assert.equal(twice.status, 2, twice.stdout + twice.stderr);
    assert.match(twice.stderr, new RegExp(`rlsight collect: .*dashboard is being written by the collector at ${first.address.replace(/[.]/g, '\\.')} \\(pid ${first.child.pid}\\); stop it first`));
    assert.equal(readFileSync(join(dash, 'collector.json'), 'utf8'), infoBefore);
    // the first one still takes records and writes them
    await push(first, 200, 400);
    for (let i = 0; i < 400 && writtenLines(dash).length < 400; i++) await new Promise((r) => setTimeout(r, 25));
    // each once: the refused collector replayed nothing of the first one's write-ahead log
    assert.equal(new Set(writtenLines(dash)).size, 400);
    assert.equal(writtenLines(dash).length, 400);
    // once it is gone (kill -9 leaves its collector.json behind), the next one takes over
    first.child.kill('SIGKILL');
    await first.exited;
    const next = await startCollect(runDir, first.child.pid);
    next.child.kill('SIGTERM');
    assert.equal(await next.exited, 0, next.output());
  });
});
