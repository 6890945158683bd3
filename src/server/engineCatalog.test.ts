import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { engineMetricNames } from '../queries/engineSeries.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { copyFixtureRun } from '../../test/support/fixtures.ts';
import { engineCatalog, sampledRawMetricNames } from './engineCatalog.ts';

test("the sampled catalog equals the full scan on the fixture run", () => {
  const copy = copyFixtureRun();
  try {
    const store = TelemetryStore.open(join(copy.dir, 'dashboard'));
    const sampled = engineCatalog(sampledRawMetricNames(store.partitions.engine_series.files()));
    assert.deepEqual(sampled, engineMetricNames(store));
    // With tiny edges the head and tail of the one file still name every metric (each scrape writes all).
    assert.deepEqual(engineCatalog(sampledRawMetricNames(store.partitions.engine_series.files(), 4096)), sampled);
  } finally {
    copy.dispose();
  }
});

test('names come from both edges; cut or escaped names are handled', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rlsight-engcat-'));
  try {
    const line = (metric: string) => `${JSON.stringify({ ts: 1, addr: 'http://a:1', metric, labels: {}, value: 1 })}\n`;
    const body = line('sglang_num_running_reqs') + line('sglang_prompt_tokens_total') + 'x'.repeat(10_000) + '\n' + line('sglang_e2e_request_latency_seconds_sum') + line('sglang_e2e_request_latency_seconds_count') + line('we"ird');
    const path = join(dir, 'h.jsonl');
    writeFileSync(path, body);
    const raw = sampledRawMetricNames([{ path, size: body.length }], 320);
    assert.ok(raw.has('sglang_num_running_reqs') && raw.has('sglang_e2e_request_latency_seconds_count') && raw.has('we"ird'));
    assert.deepEqual(engineCatalog(raw), ['sglang_e2e_latency_mean_s', 'sglang_num_running_reqs', 'sglang_prompt_tokens_per_s', 'we"ird']);
    assert.equal(sampledRawMetricNames([{ path: join(dir, 'gone.jsonl'), size: 10 }]).size, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
