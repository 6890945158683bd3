import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { copyFixtureRun, diffJson, loadGoldens } from '../../test/support/fixtures.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { BadArgument } from './limits.ts';
import { gpuProcesses } from './gpuProcesses.ts';

const run = copyFixtureRun();
after(() => run.dispose());
const dash = join(run.dir, 'dashboard');
const goldens = loadGoldens().filter((g) => g.request.startsWith('/api/timeline/gpu_processes'));

function query(request: string) {
  const p = new URL(request, 'http://x').searchParams;
  const num = (k: string) => (p.has(k) ? Number(p.get(k)) : undefined);
  return { t0: num('t0'), t1: num('t1'), lanes: p.get('lanes') ?? undefined };
}

test('every gpu_processes golden is reproduced; bad arguments are QueryErrors', () => {
  const store = TelemetryStore.open(dash);
  assert.ok(goldens.length >= 5);
  for (const g of goldens) {
    if (g.status === 200) {
      const d = diffJson(gpuProcesses(store, query(g.request)), g.body);
      assert.equal(d, null, `${g.file}: ${d}`);
    } else {
      assert.throws(() => gpuProcesses(store, query(g.request)), (e: unknown) => e instanceof BadArgument && e.message === g.body.detail, g.file);
    }
  }
});

test('window and lane filters, file order kept', () => {
  mkdirSync(join(dash, 'gpu_processes'), { recursive: true });
  const rows = [
    { ts: 1000100.0, node: '10.0.0.1', gpu: 1, pid: 7, name: 'sglang::scheduler', mem_mb: 40960 },
    { ts: 1000099.0, node: '10.0.0.1', gpu: 0, pid: 8, name: 'python', mem_mb: 1000 },
    { ts: 1000200.0, node: '10.0.0.1', gpu: 0, pid: 8, name: 'python', mem_mb: 2000 },
  ];
  appendFileSync(join(dash, 'gpu_processes', '19700112_13.jsonl'), rows.map((r) => JSON.stringify(r) + '\n').join(''));
  const store = TelemetryStore.open(dash);
  assert.deepEqual(gpuProcesses(store).processes, rows);
  assert.deepEqual(gpuProcesses(store, { t1: 1000150 }).processes, rows.slice(0, 2));
  assert.deepEqual(gpuProcesses(store, { lanes: 'g:0' }).processes, [rows[1], rows[2]]);
  assert.deepEqual(gpuProcesses(store, { lanes: 'node:10.9.9.9' }).processes, []);
});
