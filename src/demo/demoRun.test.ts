// The demo generator against the project's own readers: every file the on-disk spec lists, each
// decodable, the story's features present, deterministic for a seed, and appendable.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Tokenizer } from '@huggingface/tokenizers';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { openTorchFile } from '../formats/torch/load.ts';
import { readTensor } from '../formats/torch/tensorData.ts';
import { Tensor } from '../formats/torch/value.ts';
import { openAnswers } from '../../test/support/answers.ts';
import { TelemetryStore } from '../run/telemetry/store.ts';
import { appendDemoStep, generateDemoRun, type DemoRunInfo } from './demoRun.ts';
import { hourKey } from '../formats/dashboard/layout.ts';

const NOW = 1_790_000_000; // a fixed "now" keeps every byte reproducible
const scratch = mkdtempSync(join(tmpdir(), 'rlsight-demo-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function filesUnder(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(root, p));
    }
  };
  walk(root);
  return out.sort();
}

function digest(root: string): Map<string, string> {
  return new Map(filesUnder(root).map((f) => [f, createHash('sha256').update(readFileSync(join(root, f))).digest('hex')]));
}

function jsonLines(path: string): any[] {
  const text = readFileSync(path, 'utf8');
  assert.ok(text.endsWith('\n'), `${path} ends with a newline`);
  return text.slice(0, -1).split('\n').map((l) => JSON.parse(l));
}

const KEYS: Record<string, string[]> = {
  phases: ['name', 't0', 't1', 'node', 'gpus', 'rank', 'role'],
  gpu_util: ['ts', 'node', 'gpu', 'util', 'mem_mb', 'power_w'],
  engine_series: ['ts', 'addr', 'metric', 'labels', 'value'],
  trajectories: ['ts', 'kind', 'sample_index', 'group_index', 'turn', 'weight_version', 'detail'],
  gpu_processes: ['ts', 'node', 'gpu', 'pid', 'name', 'mem_mb'],
  metrics: ['ts', 'step_key', 'step', 'metrics'],
  topology: ['ts', 'engines'],
  data_buffer: ['ts', 'length'],
};

describe('generateDemoRun (default size)', () => {
  let run: string;
  let info: DemoRunInfo;
  before(async () => {
    run = join(scratch, 'default');
    info = await generateDemoRun(run, { seed: 3, now: NOW });
  });

  it('writes every file of the on-disk layout', () => {
    const files = new Set(filesUnder(run));
    assert.equal(info.gpus, 16);
    assert.ok(info.steps >= 4);
    const want = ['dashboard/meta.json', 'dashboard/lane_catalog.json', 'dashboard/metrics.jsonl', 'dashboard/topology.jsonl', 'dashboard/data_buffer.jsonl', 'tokenizer/tokenizer.json', 'tokenizer/tokenizer_config.json'];
    for (let s = 0; s < info.steps; s++) {
      want.push(`rollout_data/${s}.pt`, `dashboard_columns/rollout_${s}.parquet`, `trajectory/${s}.jsonl`);
      for (let r = 0; r < info.gpus; r++) want.push(`train_data/${s}_${r}.pt`);
    }
    assert.deepEqual(info.rolloutIds.eval, [0, 4]);
    for (const s of info.rolloutIds.eval) want.push(`rollout_data/eval_${s}.pt`, `dashboard_columns/rollout_eval_${s}.parquet`, `trajectory/eval_${s}.jsonl`);
    for (const f of want) assert.ok(files.has(f), `missing ${f}`);
    for (const stream of ['phases', 'gpu_util', 'engine_series', 'trajectories', 'gpu_processes']) {
      assert.ok([...files].some((f) => new RegExp(`^dashboard/${stream}/\\d{8}_\\d{2}\\.jsonl$`).test(f)), `no ${stream} partition`);
    }
    assert.ok(![...files].some((f) => f.endsWith('.tmp')), 'no temp file left behind');
  });

  it('files every record under its hour (phases by end, open markers by start) with the exact field order', () => {
    for (const stream of ['phases', 'gpu_util', 'engine_series', 'trajectories', 'gpu_processes']) {
      for (const f of readdirSync(join(run, 'dashboard', stream))) {
        for (const rec of jsonLines(join(run, 'dashboard', stream, f))) {
          assert.deepEqual(Object.keys(rec), KEYS[stream]);
          const ts = stream === 'phases' ? (rec.t1 === -1 ? rec.t0 : rec.t1) : rec.ts;
          assert.equal(`${hourKey(ts)}.jsonl`, f, `${stream} record at ${ts} filed in ${f}`);
        }
      }
    }
    for (const stream of ['metrics', 'topology', 'data_buffer']) {
      for (const rec of jsonLines(join(run, 'dashboard', `${stream}.jsonl`))) assert.deepEqual(Object.keys(rec), KEYS[stream]);
    }
    // Floats are written the Python way: a whole-number timestamp still carries ".0".
    assert.match(readFileSync(join(run, 'dashboard', 'topology.jsonl'), 'utf8'), /^\{"ts":\d+\.\d+,/);
    assert.match(readFileSync(join(run, 'dashboard', 'meta.json'), 'utf8'), /^\{\n "run_name": /);
  });

  it('looks like a recent run that ended a minute before now', () => {
    assert.ok(NOW - info.endTs >= 59 && NOW - info.endTs < 61, `ended ${NOW - info.endTs}s before now`);
    assert.ok(info.endTs - info.startTs > 20 * 60, 'runs for at least 20 minutes');
    for (const f of filesUnder(run)) assert.ok(statSync(join(run, f)).mtimeMs / 1000 <= info.endTs + 1e-3, `${f} is not newer than the run`);
  });

  it('is read by the telemetry store without a warning', () => {
    const store = TelemetryStore.open(join(run, 'dashboard'));
    assert.equal(store.laneIndex().length, 16);
    assert.ok(store.phaseEvents().length > 1000);
    assert.ok(store.trajectoryEvents().length > 1000);
    assert.ok(store.gpuUtilBlocks().reduce((a, b) => a + b.length, 0) >= 16 * 1200);
    assert.ok(store.engineSeriesBlocks().reduce((a, b) => a + b.length, 0) > 10_000);
    assert.ok(store.gpuProcessRows().length > 1000);
    assert.deepEqual(store.warnings(), []);
    for (const key of ['perf/step_time', 'rollout/rewards_mean', 'perf/actor_train_mfu', 'perf/mfu_peak_tflops', 'perf/wait_time_ratio']) assert.ok(store.metricKeys().includes(key), key);
    assert.deepEqual(store.stepKeys(), ['eval/step', 'rollout/step', 'train/step']);
  });

  it('tells the story: restart, straggler, bubble, derived engine metrics', () => {
    const topo = jsonLines(join(run, 'dashboard', 'topology.jsonl'));
    assert.equal(topo.length, 3, 'start, engine down, engine back on a new port');
    const addrs = topo.map((t) => t.engines.map((e: any) => e.addr));
    assert.equal(addrs[1].length, addrs[0].length - 1);
    const fresh = addrs[2].filter((a: string) => !addrs[0].includes(a));
    assert.equal(fresh.length, 1);

    const store = TelemetryStore.open(join(run, 'dashboard'));
    const wait = new Map<number, number>();
    for (const p of store.phaseEvents()) if (p.name === 'train_wait' && p.t1 !== -1) wait.set(p.rank, (wait.get(p.rank) ?? 0) + p.t1 - p.t0);
    const ranked = [...wait].sort((a, b) => b[1] - a[1]);
    assert.equal(ranked[0][0], 11, 'rank 11 waits longest');
    assert.ok(ranked[0][1] - ranked[1][1] > 30, 'by a clear margin');

    // A rollout's long tail: during it some GPUs idle while others still generate.
    const rollout = store.phaseEvents().filter((p) => p.name === 'rollout' && p.t1 !== -1)[0];
    const late = rollout.t1 - 5;
    const utils = new Map<string, number>();
    for (const b of store.gpuUtilBlocks()) for (let i = 0; i < b.length; i++) if (Math.abs(b.ts[i] - late) < 0.6) utils.set(store.lanes.key(b.lane[i]), Number(b.util[i]));
    const values = [...utils.values()];
    assert.ok(values.some((u) => u <= 5) && values.some((u) => u >= 80), `idle and busy GPUs at the tail: ${values}`);

    const engine = readFileSync(join(run, 'dashboard', 'engine_series', readdirSync(join(run, 'dashboard', 'engine_series'))[0]), 'utf8');
    for (const m of ['sglang_generation_tokens_total', 'sglang_time_to_first_token_seconds_sum', 'sglang_time_to_first_token_seconds_count', 'sglang_num_running_reqs']) assert.ok(engine.includes(`"metric":"${m}"`), m);
    assert.ok(engine.includes('"labels":{"engine_type":"unified","dp_rank":"1"}'));
  });

  it('writes torch archives the torch reader opens', async () => {
    const rollout = await openTorchFile(join(run, 'rollout_data', '2.pt'));
    const v = rollout.value as any;
    assert.equal(v.rollout_id, 2);
    assert.equal(v.samples.length, 128);
    assert.deepEqual(Object.keys(v.samples[0]).slice(0, 6), ['group_index', 'index', 'rollout_id', 'prompt', 'tokens', 'multimodal_inputs']);
    await rollout.close();
    const train = await openTorchFile(join(run, 'train_data', '2_13.pt'));
    const t = train.value as any;
    assert.deepEqual([t.rollout_id, t.rank, t.cp_rank, t.cp_size, t.qkv_format], [2, 13, 0, 2, 'thd']);
    assert.ok(t.rollout_data.tokens[0] instanceof Tensor);
    assert.equal(t.rollout_data.raw_reward.length, 128, 'raw_reward is batch-global');
    assert.ok('log_probs' in t.rollout_data, 'the last pipeline stage holds log-probs');
    await train.close();
    const first = await openTorchFile(join(run, 'train_data', '2_1.pt'));
    assert.equal((first.value as any).rank, 1);
    assert.ok(!('log_probs' in (first.value as any).rollout_data), 'the first pipeline stage does not');
    await first.close();
  });

  it('is read by the dump reader: every step joined, with the story in the numbers', async () => {
    const reader = await openAnswers(run);
    try {
      const ids = await reader.rolloutIds();
      assert.deepEqual(ids, { train: [0, 1, 2, 3, 4, 5], eval: [0, 4] });
      let zeroStd = 0;
      let truncated = 0;
      let mixed = 0;
      for (const id of ids.train) {
        const s = await reader.summary(id);
        assert.equal(s.rows.length, 128);
        for (const row of s.rows) {
          assert.notEqual(row.dumped_rank, null, `sample ${row.sample_index} has train data`);
          assert.equal(row.alignment_failed, false, `sample ${row.sample_index} reassembles its CP slices`);
          if (row.truncated) truncated++;
          if (row.mixed_version) mixed++;
        }
        zeroStd += (await reader.groups(id)).rows.filter((g) => g.zero_std).length;
      }
      assert.ok(zeroStd > 0 && truncated > 0 && mixed > 0, `zero-std ${zeroStd}, truncated ${truncated}, mixed ${mixed}`);
      for (const id of ids.eval) assert.equal((await reader.summary(id, true)).rows.length, 24);

      // The divergence step: train and rollout log-probs agree until the first tool response, then part.
      const div = (await reader.summary(3)).rows.filter((r) => (r.mean_abs_lp_diff as number) > 0.05);
      assert.ok(div.length > 5, `${div.length} divergent samples at step 3`);
      const sample = div[0].sample_index as number;
      const view = await reader.tokens(3, sample, { start: 0, end: 100_000 });
      const boundary = view.token_text!.findIndex((t, i) => i > view.prompt_len && t === '</tool_response>');
      assert.ok(boundary > 0, 'the sample called a tool');
      const diffs = view.lp_diff!;
      const before = diffs.slice(0, boundary - view.prompt_len).filter((d): d is number => d !== null);
      const afterB = diffs.slice(boundary - view.prompt_len + 8).filter((d): d is number => d !== null);
      const meanAbs = (xs: number[]) => xs.reduce((a, b) => a + Math.abs(b), 0) / xs.length;
      assert.ok(meanAbs(before) < 0.03 && meanAbs(afterB) > 0.15, `before ${meanAbs(before)}, after ${meanAbs(afterB)}`);
      assert.ok(view.loss_mask!.includes(0), 'tool output is masked out');

      const msgs = await reader.messages(1, (await reader.summary(1)).rows[0].sample_index as number);
      const roles = (msgs.messages as any[]).map((m) => m.role);
      assert.ok(roles.includes('tool') && (msgs.messages as any[]).some((m) => m.reasoning_content && m.tool_calls), 'thinking and tool calls');
    } finally {
      await reader.close();
    }
  });

  it('ships a tokenizer whose decoding reproduces every response text', async () => {
    const tok = new Tokenizer(JSON.parse(readFileSync(join(run, 'tokenizer', 'tokenizer.json'), 'utf8')), JSON.parse(readFileSync(join(run, 'tokenizer', 'tokenizer_config.json'), 'utf8')));
    const file = await openTorchFile(join(run, 'rollout_data', '1.pt'));
    const samples = (file.value as any).samples as any[];
    for (const s of samples.slice(0, 20)) {
      const ids: number[] = s.tokens;
      const prompt = ids.length - s.response_length;
      assert.equal(tok.decode(ids.slice(prompt), { skip_special_tokens: false }), s.response);
      assert.deepEqual(tok.encode(s.response, { add_special_tokens: false }).ids, ids.slice(prompt), 'our ids are what the tokenizer itself produces');
    }
    const words = samples[0].tokens.slice(0, 12).map((id: number) => tok.decode([id]));
    assert.ok(words.includes(' careful'), `token text reads as words: ${JSON.stringify(words)}`);
    await file.close();
  });

  it('mirrors rollout columns in parquet with row groups of 8', async () => {
    const buf = readFileSync(join(run, 'dashboard_columns', 'rollout_0.parquet'));
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
    const meta = parquetMetadata(ab);
    assert.equal(Number(meta.num_rows), 128);
    assert.deepEqual(meta.row_groups.map((g) => Number(g.num_rows)), new Array(16).fill(8));
    const rows = await parquetReadObjects({ file: ab, compressors });
    assert.deepEqual(Object.keys(rows[0]), ['sample_index', 'response_length', 'total_length', 'tokens', 'loss_mask', 'rollout_log_probs']);
    const pt = await openTorchFile(join(run, 'rollout_data', '0.pt'));
    const s0 = (pt.value as any).samples[0];
    assert.deepEqual(rows[0].tokens, s0.tokens);
    assert.equal(rows[0].rollout_log_probs[3], Math.fround(s0.rollout_log_probs[3]));
    await pt.close();
  });

  it('writes TP copies of a shard with identical contents and CP ranks with complementary slices', async () => {
    const files = await Promise.all([8, 9, 10].map((rank) => openTorchFile(join(run, 'train_data', `0_${rank}.pt`))));
    const [a, b, c] = files.map((f) => f.value as any);
    assert.deepEqual(a.rollout_data.sample_indices, b.rollout_data.sample_indices, 'tp peers hold one shard');
    assert.deepEqual([a.cp_rank, b.cp_rank, c.cp_rank], [0, 0, 1]);
    const la = await readTensor(a.rollout_data.log_probs[0]);
    const lc = await readTensor(c.rollout_data.log_probs[0]);
    assert.equal(la.length + lc.length, a.rollout_data.response_lengths[0], 'two CP slices cover the response');
    for (const f of files) await f.close();
  });
});

describe('generateDemoRun determinism and follow', () => {
  it('writes the same bytes for the same seed and different bytes for another seed', async () => {
    const a = join(scratch, 'a');
    const b = join(scratch, 'b');
    const c = join(scratch, 'c');
    await generateDemoRun(a, { seed: 7, steps: 2, now: NOW });
    await generateDemoRun(b, { seed: 7, steps: 2, now: NOW });
    await generateDemoRun(c, { seed: 8, steps: 2, now: NOW });
    assert.deepEqual(digest(a), digest(b));
    assert.notEqual(digest(a).get('rollout_data/1.pt'), digest(c).get('rollout_data/1.pt'));
  });

  it('refuses to write over an existing run', async () => {
    await assert.rejects(generateDemoRun(join(scratch, 'a'), { steps: 1 }), /already holds a run/);
  });

  it('appends the next step as a live run would, and a following store picks it up cleanly', async () => {
    const live = join(scratch, 'live');
    const whole = join(scratch, 'whole');
    await generateDemoRun(live, { seed: 5, steps: 2, now: NOW });
    await generateDemoRun(whole, { seed: 5, steps: 3, now: NOW });
    const store = TelemetryStore.open(join(live, 'dashboard'));
    const rowsBefore = store.phaseEvents().length + store.gpuUtilBlocks().reduce((x, b) => x + b.length, 0);
    const openBefore = store.phaseEvents().filter((p) => p.name === 'train_wait' && p.t1 === -1).length;
    const appended = await appendDemoStep(live);
    assert.equal(appended.step, 2);
    assert.ok(appended.t1 > appended.t0);
    const report = store.follow();
    assert.ok(report.rows > 0);
    const rowsAfter = store.phaseEvents().length + store.gpuUtilBlocks().reduce((x, b) => x + b.length, 0);
    assert.ok(rowsAfter > rowsBefore);
    assert.deepEqual(store.warnings(), []);
    // Every train_wait left open closes in the new step.
    const closed = new Set(store.phaseEvents().filter((p) => p.name === 'train_wait' && p.t1 !== -1).map((p) => `${p.rank}@${p.t0}`));
    const opened = store.phaseEvents().filter((p) => p.name === 'train_wait' && p.t1 === -1);
    assert.equal(opened.filter((p) => closed.has(`${p.rank}@${p.t0}`)).length, openBefore);
    // The dumps are those of a run generated with one more step.
    for (const f of ['rollout_data/2.pt', 'train_data/2_0.pt', 'train_data/2_15.pt', 'dashboard_columns/rollout_2.parquet', 'trajectory/2.jsonl']) {
      assert.equal(digest(live).get(f), digest(whole).get(f), f);
    }
    const reader = await openAnswers(live);
    assert.deepEqual((await reader.rolloutIds()).train, [0, 1, 2]);
    assert.equal((await reader.summary(2)).rows.length, 128);
    await reader.close();
  });

  it('rejects a directory the demo did not make', async () => {
    await assert.rejects(appendDemoStep(join(scratch, 'nowhere')), /not a demo run/);
  });
});

describe('generateDemoRun --large', () => {
  it('spans 128 GPUs so the fleet overview has more than 64 lanes', async () => {
    const run = join(scratch, 'large');
    const info = await generateDemoRun(run, { large: true, steps: 1, now: NOW });
    assert.equal(info.gpus, 128);
    const store = TelemetryStore.open(join(run, 'dashboard'));
    assert.equal(store.laneIndex().length, 128);
    assert.ok(store.gpuUtilBlocks().length > 0);
    assert.deepEqual(store.warnings(), []);
    const reader = await openAnswers(run);
    const s = await reader.summary(0);
    assert.equal(s.rows.length, 256);
    assert.ok(s.rows.every((r) => r.alignment_failed === false && r.dumped_rank !== null));
    await reader.close();
  });
});
