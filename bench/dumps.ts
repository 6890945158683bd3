// Dump read path at reference scale: one step of 4,096 samples × ~4,000 tokens with 1,024 train rank files
// (256 DP shards × 4 duplicate ranks) and a parquet mirror. Prints one JSON line:
// cold/warm step summary, cold/warm token read of a 9,213-token sample (cold ones with their process CPU time),
// peak RSS of the measuring process, and the machine's load.
//   node --import tsx bench/dumps.ts            generate into a temp dir, measure in a child process, clean up
//   node --import tsx bench/dumps.ts --keep DIR generate into DIR and keep it
//   node --import tsx bench/dumps.ts --measure DIR  measure an already generated DIR
//   RLSIGHT_BENCH_SMALL=1 ...                       a 64-sample smoke version of the same shape
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, readdirSync, statSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteFile } from 'hyparquet-writer';
import { PyFloat, saveTorch, type Picklable } from '../src/formats/torch/writer.ts';
import { Storage, Tensor, type DType } from '../src/formats/torch/value.ts';
import { fixturePath } from '../test/support/fixtures.ts';

// RLSIGHT_BENCH_SMALL=1 runs a 64-sample smoke version of the same shape.
const SMALL = process.env.RLSIGHT_BENCH_SMALL === '1';
const SAMPLES = SMALL ? 64 : 4096;
const SHARDS = SMALL ? 4 : 256;
const DUPLICATES = 4;
const ROWS_PER_SHARD = SAMPLES / SHARDS;
const BIG_SAMPLE = SMALL ? 12 : 1234;
const BIG_TOTAL = 9213;

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function tensor(dtype: DType, data: Float32Array | Int32Array | BigInt64Array): Tensor {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Tensor(dtype, [data.length], [1], 0, Storage.fromBytes('0', dtype, bytes));
}

interface Shape {
  prompt: number;
  response: number;
  tokens: Int32Array;
  logProbs: Float32Array;
  reward: number;
}

async function generate(dir: string): Promise<void> {
  const rand = rng(7);
  for (const d of ['rollout_data', 'train_data', 'dashboard_columns', 'tokenizer']) mkdirSync(join(dir, d), { recursive: true });
  const fixtureTokenizer = fixturePath('miles-demo', 'run', 'tokenizer');
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
    try {
      copyFileSync(join(fixtureTokenizer, f), join(dir, 'tokenizer', f));
    } catch {
      // No tokenizer available: token_text is then null, which does not change the read path's cost much.
    }
  }

  const shapes: Shape[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const prompt = i === BIG_SAMPLE ? 700 : 300 + Math.floor(rand() * 400);
    const response = i === BIG_SAMPLE ? BIG_TOTAL - 700 : 2600 + Math.floor(rand() * 2200);
    const tokens = new Int32Array(prompt + response);
    for (let t = 0; t < tokens.length; t++) tokens[t] = Math.floor(rand() * 100);
    const logProbs = new Float32Array(response);
    for (let t = 0; t < response; t++) logProbs[t] = -rand();
    shapes.push({ prompt, response, tokens, logProbs, reward: rand() < 0.5 ? 1 : 0 });
  }

  // Rollout dump: Sample.to_dict() per sample, lists of Python ints/floats as miles writes them.
  const samples = shapes.map((s, i): Picklable => ({
    group_index: Math.floor(i / 8),
    index: i,
    rollout_id: i,
    prompt: i % 3 === 0 ? [{ role: 'user', content: 'Solve the task.' }, { role: 'tool', content: '42' }] : 'Solve the task.',
    tokens: s.tokens,
    multimodal_inputs: null,
    multimodal_train_inputs: null,
    response: 'x'.repeat(s.response * 3),
    response_length: s.response,
    label: null,
    reward: new PyFloat(s.reward),
    loss_mask: null,
    weight_versions: i % 3 === 0 ? ['4', '5'] : ['5'],
    rollout_log_probs: Float64Array.from(s.logProbs),
    rollout_routed_experts: null,
    rollout_indexer_topk: null,
    remove_sample: false,
    teacher_log_probs: null,
    opd_reverse_kl: null,
    status: s.response > 4700 ? 'truncated' : 'completed',
    metadata: {},
    generate_function_path: null,
    train_metadata: null,
    adapter: null,
    reward_spec: null,
    routing_key: null,
    non_generation_time: 0.5,
    spec_info: { spec_accept_token_num: 0, spec_draft_token_num: 0, spec_verify_ct: 0, completion_token_num: 0 },
    prefix_cache_info: { cached_tokens: 100, total_prompt_tokens: s.prompt },
  }));
  await saveTorch({ rollout_id: 0, metadata: {}, samples }, join(dir, 'rollout_data', '0.pt'));

  // Train dumps: a balanced partition (shuffled order), each shard written by DUPLICATES ranks.
  const order = Array.from({ length: SAMPLES }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const rawReward = Float64Array.from(shapes, (s) => s.reward);
  for (let shard = 0; shard < SHARDS; shard++) {
    const rows = order.slice(shard * ROWS_PER_SHARD, (shard + 1) * ROWS_PER_SHARD);
    const perToken = (f: (s: Shape) => Float32Array) => rows.map((i) => tensor('float32', f(shapes[i])));
    const noise = (s: Shape, scale: number) => Float32Array.from(s.logProbs, (v) => v * scale - rand() * 0.01);
    const rd: Picklable = {
      tokens: rows.map((i) => tensor('int64', BigInt64Array.from(shapes[i].tokens, (t) => BigInt(t)))),
      response_lengths: rows.map((i) => shapes[i].response),
      rewards: Float64Array.from(rows, (i) => shapes[i].reward - 0.5),
      truncated: rows.map((i) => (shapes[i].response > 4700 ? 1 : 0)),
      loss_masks: rows.map((i) => tensor('int32', new Int32Array(shapes[i].response).fill(1))),
      sample_indices: rows,
      rollout_ids: rows,
      rollout_mask_sums: Float64Array.from(rows, (i) => shapes[i].response),
      rollout_log_probs: perToken((s) => s.logProbs),
      weight_versions: rows.map((i) => (i % 3 === 0 ? ['4', '5'] : ['5'])),
      raw_reward: rawReward,
      total_lengths: rows.map((i) => shapes[i].tokens.length),
      log_probs: perToken((s) => noise(s, 1.01)),
      ref_log_probs: perToken((s) => noise(s, 0.99)),
      advantages: perToken((s) => new Float32Array(s.response).fill(s.reward - 0.5)),
      returns: perToken((s) => new Float32Array(s.response).fill(s.reward - 0.5)),
      entropy: perToken((s) => Float32Array.from(s.logProbs, (v) => -v * 1.3)),
      ref_entropy: perToken((s) => Float32Array.from(s.logProbs, (v) => -v * 1.2)),
    };
    const first = join(dir, 'train_data', `0_${shard * DUPLICATES}.pt`);
    await saveTorch({ rollout_id: 0, rank: shard * DUPLICATES, rollout_data: rd, cp_rank: 0, cp_size: 1, qkv_format: 'thd' }, first, { root: `0_${shard * DUPLICATES}` });
    // TP peers write byte-identical shards (only the recorded rank differs, which the reader does not need here).
    for (let d = 1; d < DUPLICATES; d++) copyFileSync(first, join(dir, 'train_data', `0_${shard * DUPLICATES + d}.pt`));
  }

  // Parquet mirror, as save_dashboard_columns writes it (8 rows per row group).
  const list = (name: string, type: object) => [
    { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', repetition_type: 'OPTIONAL', ...type },
  ];
  await parquetWriteFile({
    filename: join(dir, 'dashboard_columns', 'rollout_0.parquet'),
    columnData: [
      { name: 'sample_index', data: Int32Array.from(shapes, (_, i) => i) },
      { name: 'response_length', data: Int32Array.from(shapes, (s) => s.response) },
      { name: 'total_length', data: Int32Array.from(shapes, (s) => s.tokens.length) },
      { name: 'tokens', data: shapes.map((s) => Array.from(s.tokens)) },
      { name: 'loss_mask', data: shapes.map(() => null) },
      { name: 'rollout_log_probs', data: shapes.map((s) => Array.from(s.logProbs)) },
    ],
    schema: [
      { name: 'root', num_children: 6 },
      { name: 'sample_index', type: 'INT32', repetition_type: 'OPTIONAL' },
      { name: 'response_length', type: 'INT32', repetition_type: 'OPTIONAL' },
      { name: 'total_length', type: 'INT32', repetition_type: 'OPTIONAL' },
      ...list('tokens', { type: 'INT32' }),
      ...list('loss_mask', { type: 'INT32', converted_type: 'INT_8' }),
      ...list('rollout_log_probs', { type: 'FLOAT' }),
    ] as never,
    rowGroupSize: 8,
  });

  const old = Date.now() / 1000 - 3600;
  const age = (p: string): void => {
    if (statSync(p).isDirectory()) for (const n of readdirSync(p)) age(join(p, n));
    utimesSync(p, old, old);
  };
  age(dir);
}

async function measure(dir: string): Promise<Record<string, number>> {
  const { openRun } = await import('../src/commands/openRun.ts');
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const time = async <T>(f: () => Promise<T>): Promise<[number, T]> => {
    const t0 = performance.now();
    const v = await f();
    return [performance.now() - t0, v];
  };
  // CPU time of the whole process (worker threads included): on a shared machine wall time mostly measures the load.
  const cpu = async <T>(f: () => Promise<T>): Promise<[number, number, T]> => {
    const c0 = process.cpuUsage();
    const [ms, v] = await time(f);
    const c = process.cpuUsage(c0);
    return [ms, (c.user + c.system) / 1000, v];
  };
  const load = loadavg()[0];
  // Through the queries, as the server answers: the reader yields records, the queries assemble the tables.
  const run = await openRun(dir);
  const [coldSummary, coldSummaryCpu, summary] = await cpu(() => run.summary(0, false));
  const warm: number[] = [];
  for (let i = 0; i < 5; i++) warm.push((await time(() => run.summary(0, false)))[0]);
  const tokensRun = await openRun(dir);
  const tokens = () => tokensRun.tokens(0, BIG_SAMPLE, { start: 0, evaluation: false });
  const [coldTokens, coldTokensCpu, view] = await cpu(tokens);
  const warmTokens: number[] = [];
  for (let i = 0; i < 5; i++) warmTokens.push((await time(tokens))[0]);
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  if (summary.rows.length !== SAMPLES || view.total_len !== BIG_TOTAL || view.train_log_probs?.length !== BIG_TOTAL - 700) {
    throw new Error('bench run answered wrongly');
  }
  return {
    cold_summary_ms: Math.round(coldSummary),
    cold_summary_cpu_ms: Math.round(coldSummaryCpu),
    warm_summary_ms: Number(median(warm).toFixed(2)),
    cold_tokens_ms: Math.round(coldTokens),
    cold_tokens_cpu_ms: Math.round(coldTokensCpu),
    warm_tokens_ms: Number(median(warmTokens).toFixed(2)),
    peak_rss_mb: Math.round(Math.max(peak, process.resourceUsage().maxRSS * 1024) / 2 ** 20),
    load_1m: Number(load.toFixed(2)),
    cores: availableParallelism(),
  };
}

const args = process.argv.slice(2);
if (args[0] === '--measure') {
  console.log(JSON.stringify(await measure(args[1])));
} else {
  const keep = args[0] === '--keep' ? args[1] : undefined;
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'rlsight-bench-dumps-'));
  try {
    const t0 = performance.now();
    await generate(dir);
    const generateS = (performance.now() - t0) / 1000;
    const bytes = (p: string): number => (statSync(p).isDirectory() ? readdirSync(p).reduce((s, n) => s + bytes(join(p, n)), 0) : statSync(p).size);
    const child = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--measure', dir], { encoding: 'utf8' });
    if (child.status !== 0) throw new Error(`measurement failed: ${child.stderr}`);
    const result = JSON.parse(child.stdout.trim().split('\n').pop()!);
    console.log(
      JSON.stringify({
        bench: 'dumps',
        samples: SAMPLES,
        train_rank_files: SHARDS * DUPLICATES,
        rollout_pt_mb: Math.round(statSync(join(dir, 'rollout_data', '0.pt')).size / 2 ** 20),
        step_gb: Number((bytes(dir) / 2 ** 30).toFixed(2)),
        token_sample_len: BIG_TOTAL,
        ...result,
        generate_s: Number(generateS.toFixed(1)),
        page_cache: 'warm (files just written)',
      }),
    );
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}
