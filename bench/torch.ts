// Writes a rollout-shaped torch dump (4,096 samples x ~4,000 tokens) with saveTorch, then times decoding it.
// Run by hand: node --import tsx bench/torch.ts [samples] [tokens]   -> one JSON line on stdout.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTorchFile } from '../src/formats/torch/load.ts';
import { saveTorch, type Picklable } from '../src/formats/torch/writer.ts';

const samples = Number(process.argv[2] ?? 4096);
const tokensPerSample = Number(process.argv[3] ?? 4000);
const promptLen = 200;

let seed = 12345;
const rand = (): number => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};

// A pool of distinct per-sample columns, reused across samples (the file still holds every byte).
const POOL = 32;
const pool = Array.from({ length: POOL }, () => {
  const total = tokensPerSample - 50 + Math.floor(rand() * 100);
  const resp = total - promptLen;
  const tokens = new Int32Array(total);
  for (let i = 0; i < total; i++) tokens[i] = Math.floor(rand() * 151_000);
  const logprobs = new Float64Array(resp);
  for (let i = 0; i < resp; i++) logprobs[i] = -rand() * 3;
  const mask = new Int8Array(resp).fill(1);
  return { tokens, logprobs, mask, resp };
});

function sample(i: number): Picklable {
  const p = pool[i % POOL];
  return {
    group_index: Math.floor(i / 8), index: i, rollout_id: i, prompt: 'Solve the following problem step by step. '.repeat(4),
    tokens: p.tokens, multimodal_inputs: null, multimodal_train_inputs: null, response: 'x'.repeat(200),
    response_length: p.resp, label: '42', reward: i % 3 === 0 ? 1 : 0, loss_mask: p.mask, weight_versions: ['7'],
    rollout_log_probs: p.logprobs, rollout_routed_experts: null, rollout_indexer_topk: null, remove_sample: false,
    teacher_log_probs: null, opd_reverse_kl: null, status: 'completed', metadata: { round_number: 1 },
    generate_function_path: null, train_metadata: null, adapter: null, reward_spec: null, routing_key: null,
    non_generation_time: 0.25, spec_info: { spec_accept_token_num: 0, spec_draft_token_num: 0, spec_verify_ct: 0, completion_token_num: p.resp },
    prefix_cache_info: { cached_tokens: 0, total_prompt_tokens: promptLen },
  };
}

const dir = mkdtempSync(join(tmpdir(), 'rlsight-bench-torch-'));
try {
  const path = join(dir, '7.pt');
  const value = { rollout_id: 7, metadata: {}, samples: Array.from({ length: samples }, (_, i) => sample(i)) };
  let t0 = performance.now();
  await saveTorch(value, path);
  const writeMs = performance.now() - t0;
  const fileBytes = statSync(path).size;

  const rssBefore = process.memoryUsage().rss;
  t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const f = await openTorchFile(path);
  const decodeMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const decodeCpuS = (cpu.user + cpu.system) / 1e6;
  const pklBytes = f.entries.find((e) => e.name.endsWith('/data.pkl'))!.size;
  let tokens = 0;
  let lpSum = 0;
  for (const s of (f.value as any).samples) {
    tokens += s.tokens.length;
    for (const x of s.rollout_log_probs) lpSum += x;
  }
  const walkMs = performance.now() - t0 - decodeMs;
  await f.close();
  const heldRss = process.memoryUsage().rss;
  (f as { value: unknown }).value = null;

  // The same file with numeric lists decoded to Int32Array/Float64Array.
  const tcpu0 = process.cpuUsage();
  const t1 = performance.now();
  const typed = await openTorchFile(path, { typedLists: true });
  const typedMs = performance.now() - t1;
  const tcpu = process.cpuUsage(tcpu0);
  const typedCpuS = (tcpu.user + tcpu.system) / 1e6;
  let typedTokens = 0;
  for (const s of (typed.value as any).samples) typedTokens += s.tokens.length;
  await typed.close();
  if (typedTokens !== tokens) throw new Error(`typed decode found ${typedTokens} tokens, plain ${tokens}`);
  console.log(
    JSON.stringify({
      bench: 'torch-rollout-decode',
      samples,
      tokens_per_sample: tokensPerSample,
      file_mb: +(fileBytes / 1e6).toFixed(1),
      pickle_mb: +(pklBytes / 1e6).toFixed(1),
      write_s: +(writeMs / 1000).toFixed(2),
      write_mb_s: +(fileBytes / 1e6 / (writeMs / 1000)).toFixed(1),
      decode_s: +(decodeMs / 1000).toFixed(2),
      decode_mb_s: +(pklBytes / 1e6 / (decodeMs / 1000)).toFixed(1),
      // CPU time (all threads) is the figure that survives a busy machine.
      decode_cpu_s: +decodeCpuS.toFixed(2),
      decode_mb_per_cpu_s: +(pklBytes / 1e6 / decodeCpuS).toFixed(1),
      walk_s: +(walkMs / 1000).toFixed(2),
      typed_decode_s: +(typedMs / 1000).toFixed(2),
      typed_decode_cpu_s: +typedCpuS.toFixed(2),
      typed_decode_mb_per_cpu_s: +(pklBytes / 1e6 / typedCpuS).toFixed(1),
      tokens,
      logprob_sum: +lpSum.toFixed(3),
      rss_before_decode_mb: Math.round(rssBefore / 1e6),
      rss_after_plain_decode_mb: Math.round(heldRss / 1e6),
      peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1e3),
      load_avg_1m: +loadavg()[0].toFixed(1),
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
