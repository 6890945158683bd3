// Damaged and hostile telemetry: what is refused is skipped with a warning naming the file, never served.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { MAX_LANES } from './laneCatalog.ts';
import { TelemetryStore } from './store.ts';

const root = mkdtempSync(join(tmpdir(), 'rlsight-telemetry-damage-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function fresh(): string {
  const d = join(root, `d${n++}`);
  mkdirSync(join(d, 'gpu_util'), { recursive: true });
  return d;
}
const H13 = 997200;
const gpuLine = (ts: number, node: string, gpu: number, util: number): string =>
  `{"ts":${ts}.0,"node":"${node}","gpu":${gpu},"util":${util},"mem_mb":1000,"power_w":100}\n`;

describe('lane catalog limits', () => {
  test('a catalog of 200,000 lanes is refused with a warning; lanes are scanned from the streams instead', () => {
    const d = fresh();
    writeFileSync(join(d, 'gpu_util', '19700112_13.jsonl'), gpuLine(H13 + 1, 'a', 0, 1) + gpuLine(H13 + 2, 'a', 1, 2));
    const lanes: Record<string, unknown> = {};
    for (let i = 0; i < 200_000; i++) lanes[`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:${i % 8}`] = { ranks: [i], engine_addrs: [], roles: ['train'] };
    writeFileSync(join(d, 'lane_catalog.json'), JSON.stringify({ version: 1, lanes }));
    const store = TelemetryStore.open(d);
    assert.equal(store.hasLaneCatalog(), false);
    const w = store.warnings().filter((x) => x.file === 'lane_catalog.json');
    assert.equal(w.length, 1);
    assert.match(w[0].message, /bytes exceed the limit|lanes exceed the limit/);
    assert.deepEqual(store.laneIndex().map((l) => l.gpu), [0, 1]);
  });

  test('a compact catalog over the lane limit is refused by its lane count', () => {
    const d = fresh();
    const lanes: Record<string, unknown> = {};
    for (let i = 0; i <= MAX_LANES; i++) lanes[`n:${i}`] = {};
    writeFileSync(join(d, 'lane_catalog.json'), JSON.stringify({ version: 1, lanes }));
    const store = TelemetryStore.open(d);
    assert.equal(store.hasLaneCatalog(), false);
    assert.match(store.warnings().find((x) => x.file === 'lane_catalog.json')!.message, new RegExp(`${MAX_LANES + 1} lanes exceed the limit of ${MAX_LANES}`));
  });
});
