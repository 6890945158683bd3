import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { hourKey } from '../formats/dashboard/layout.ts';
import { TelemetryWriter } from './telemetryWriter.ts';

const dir = mkdtempSync(join(tmpdir(), 'rlsight-writer-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('TelemetryWriter', () => {
  it('names hours in UTC as time.strftime does', () => {
    assert.equal(hourKey(1000030.0), '19700112_13');
    assert.equal(hourKey(1755800010.5), '20250821_18');
    assert.equal(hourKey(1755802799.999), '20250821_18');
    assert.equal(hourKey(1755802800), '20250821_19');
  });

  it('files lines by partition hour, keeps order within a file, and appends to existing files', () => {
    const w = new TelemetryWriter(join(dir, 'dashboard'), 64);
    const base = 1755800000; // 18:13:20 UTC
    for (let i = 0; i < 400; i++) w.appendPartitioned('gpu_util', base + i * 20, `{"i":${i}}`);
    w.appendSingle('metrics', '{"m":1}');
    w.close();
    const again = new TelemetryWriter(join(dir, 'dashboard'));
    again.appendSingle('metrics', '{"m":2}');
    again.appendPartitioned('gpu_util', base, '{"i":"late"}');
    again.close();
    assert.deepEqual(readdirSync(join(dir, 'dashboard', 'gpu_util')).sort(), ['20250821_18.jsonl', '20250821_19.jsonl', '20250821_20.jsonl']);
    const h18 = readFileSync(join(dir, 'dashboard', 'gpu_util', '20250821_18.jsonl'), 'utf8').trimEnd().split('\n');
    const first = Math.ceil((1755802800 - base) / 20);
    assert.equal(h18.length, first + 1);
    assert.deepEqual(h18.slice(0, 3), ['{"i":0}', '{"i":1}', '{"i":2}']);
    assert.equal(h18.at(-1), '{"i":"late"}');
    assert.equal(readFileSync(join(dir, 'dashboard', 'metrics.jsonl'), 'utf8'), '{"m":1}\n{"m":2}\n');
    assert.equal(w.rows, 401);
  });
});
