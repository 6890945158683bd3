// Writes the dumps of one demo step as miles' training does: the rollout `.pt`, its parquet
// column mirror and trajectory sidecar, then one train `.pt` per global rank (TP/PP copies, CP slices).
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { PyFloat, saveTorch, type Picklable } from '../formats/torch/writer.ts';
import { Storage, Tensor, type DType } from '../formats/torch/value.ts';
import { type ClusterLayout, rankCoords, worldSize } from './clusterLayout.ts';
import type { ChatMessage } from './conversations.ts';
import type { PlannedSample, RunPlan, StepPlan } from './demoPlan.ts';
import { pyDumps, type PyJson } from '../formats/pythonJson.ts';
import { SeededRandom } from './random.ts';
import type { DemoTokenizer } from './vocabulary.ts';
import { mirrorFile, rolloutFile, STEP_DIRS, trainFile, trajectoryFile } from '../formats/miles/layout.ts';
import { cpResponseRanges } from '../formats/miles/cpSplit.ts';

/** Per-token numbers of one sample, shared by its rollout dump and every train rank holding it. */
export interface TokenStats {
  rolloutLogProbs: Float64Array;
  logProbs: Float32Array;
  refLogProbs: Float32Array;
  entropy: Float32Array;
  advantage: number;
}

/** Log-probs, entropy and advantages for a sample; divergent samples drift after their first tool response. */
export function tokenStats(seed: number, step: number, s: PlannedSample, advantage: number): TokenStats {
  const rng = SeededRandom.derive(seed, 'tokens', s.evaluation ? 'eval' : 'train', step, s.index);
  const n = s.responseLength;
  const rollout = new Float64Array(n);
  const train = new Float32Array(n);
  const ref = new Float32Array(n);
  const entropy = new Float32Array(n);
  const divergeAt = s.divergent && s.turnStarts.length > 1 ? s.turnStarts[1] : Infinity;
  for (let i = 0; i < n; i++) {
    if (s.lossMask[i] === 0) {
      // Tool output is not sampled by the engine: it gets no log-prob.
      rollout[i] = 0.0;
      train[i] = 0.0;
      ref[i] = 0.0;
      entropy[i] = 0.0;
      continue;
    }
    const lp = -Math.min(12, Math.exp(rng.normal(-3.0, 1.6)));
    rollout[i] = lp;
    let t = lp + rng.normal(0, 0.004 + 0.02 * Math.abs(lp));
    if (i >= divergeAt) t = lp + rng.normal(-0.38, 0.3);
    train[i] = Math.min(0, t);
    ref[i] = Math.min(0, train[i] + rng.normal(0, 0.012 + 0.004 * step));
    entropy[i] = Math.max(0.001, 0.06 + 2.1 * Math.pow(-lp, 0.7) + rng.normal(0, 0.05));
  }
  return { rolloutLogProbs: rollout, logProbs: train, refLogProbs: ref, entropy, advantage };
}

/** GRPO: reward minus the group mean, over the group's unbiased std (+1e-6), in float32 as the trainer holds it. */
export function grpoAdvantages(samples: PlannedSample[]): Map<number, number> {
  const groups = new Map<number, PlannedSample[]>();
  for (const s of samples) groups.set(s.groupIndex, [...(groups.get(s.groupIndex) ?? []), s]);
  const out = new Map<number, number>();
  for (const g of groups.values()) {
    const mean = g.reduce((a, s) => a + s.reward, 0) / g.length;
    const variance = g.length > 1 ? g.reduce((a, s) => a + (s.reward - mean) ** 2, 0) / (g.length - 1) : 0;
    const std = Math.sqrt(variance);
    for (const s of g) out.set(s.index, Math.fround((s.reward - mean) / (std + 1e-6)));
  }
  return out;
}

function tensor(dtype: DType, data: Float32Array | Int32Array | BigInt64Array): Tensor {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Tensor(dtype, [data.length], [1], 0, Storage.fromBytes('0', dtype, bytes));
}

/** The conversation as far as it was generated (a truncated sample stops mid-turn). */
export function generatedMessages(s: PlannedSample, tokenizer: DemoTokenizer): ChatMessage[] {
  if (s.status !== 'truncated') return s.conversation.messages;
  // Keep what was generated before the cap: whole turns, then the cut-off turn's text.
  const kept: ChatMessage[] = [...s.conversation.prompt];
  const assistantTurns = s.turnStarts.length;
  let seen = 0;
  for (const m of s.conversation.messages.slice(s.conversation.prompt.length)) {
    if (m.role === 'assistant') {
      seen++;
      if (seen === assistantTurns) break;
    }
    kept.push(m);
  }
  const lastStart = s.turnStarts[assistantTurns - 1] ?? 0;
  const partial = tokenizer.decode(s.tokens.slice(s.promptLength + lastStart)).replace(/^<think>\n/, '');
  kept.push({ role: 'assistant', content: '', reasoning_content: partial });
  return kept;
}

function sampleDict(s: PlannedSample, stats: TokenStats, tokenizer: DemoTokenizer): Record<string, Picklable> {
  const toolSeconds = s.attempts[s.attempts.length - 1].turns.reduce((a, t) => a + (t.tool ? t.tool.t1 - t.tool.t0 : 0), 0);
  const cached = s.conversation.toolCalls > 0 ? Math.floor(s.promptLength * 0.6) : 0;
  return {
    group_index: s.groupIndex,
    index: s.index,
    rollout_id: s.index,
    // A multi-turn agentic rollout grows the sample's prompt into the whole message list as it runs:
    // assistant turns and one `tool` message per call, which is what the tool_calls column counts.
    prompt: generatedMessages(s, tokenizer).map((m) => ({ role: m.role, content: m.content })),
    tokens: Int32Array.from(s.tokens),
    multimodal_inputs: null,
    multimodal_train_inputs: null,
    response: tokenizer.decode(s.tokens.slice(s.promptLength)),
    response_length: s.responseLength,
    label: String(s.conversation.problem.answer),
    reward: new PyFloat(s.reward),
    loss_mask: Int32Array.from(s.lossMask),
    weight_versions: [...s.weightVersions],
    rollout_log_probs: stats.rolloutLogProbs,
    rollout_routed_experts: null,
    rollout_indexer_topk: null,
    remove_sample: false,
    teacher_log_probs: null,
    opd_reverse_kl: null,
    status: s.status,
    metadata: { tool_calls: s.conversation.toolCalls, answer: s.conversation.finalAnswer === null ? null : String(s.conversation.finalAnswer) },
    generate_function_path: 'examples.agentic_math.generate_with_python.generate',
    train_metadata: null,
    adapter: null,
    reward_spec: null,
    routing_key: null,
    non_generation_time: new PyFloat(Math.round(toolSeconds * 1000) / 1000),
    spec_info: { spec_accept_token_num: 0, spec_draft_token_num: 0, spec_verify_ct: 0, completion_token_num: s.responseLength - s.lossMask.filter((m) => m === 0).length },
    prefix_cache_info: { cached_tokens: cached, total_prompt_tokens: s.promptLength },
  };
}

const PARQUET_SCHEMA = [
  { name: 'root', num_children: 6 },
  { name: 'sample_index', type: 'INT32', repetition_type: 'OPTIONAL' },
  { name: 'response_length', type: 'INT32', repetition_type: 'OPTIONAL' },
  { name: 'total_length', type: 'INT32', repetition_type: 'OPTIONAL' },
  { name: 'tokens', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type: 'INT32', repetition_type: 'OPTIONAL' },
  { name: 'loss_mask', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type: 'INT32', repetition_type: 'OPTIONAL', converted_type: 'INT_8', logical_type: { type: 'INTEGER', bitWidth: 8, isSigned: true } },
  { name: 'rollout_log_probs', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type: 'FLOAT', repetition_type: 'OPTIONAL' },
] as const;

/** `dashboard_columns/rollout_{stem}.parquet`, row groups of 8, via a temp file and a rename. */
function writeParquetMirror(path: string, samples: PlannedSample[], stats: TokenStats[]): void {
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: 'sample_index', data: samples.map((s) => s.index) },
      { name: 'response_length', data: samples.map((s) => s.responseLength) },
      { name: 'total_length', data: samples.map((s) => s.tokens.length) },
      { name: 'tokens', data: samples.map((s) => s.tokens) },
      { name: 'loss_mask', data: samples.map((s) => s.lossMask) },
      { name: 'rollout_log_probs', data: stats.map((x) => Array.from(Float32Array.from(x.rolloutLogProbs))) },
    ],
    schema: PARQUET_SCHEMA as unknown as Parameters<typeof parquetWriteBuffer>[0]['schema'],
    rowGroupSize: 8,
    codec: 'SNAPPY',
    createdBy: 'rlsight demo',
  });
  const tmp = path.replace(/\.parquet$/, '.tmp');
  writeFileSync(tmp, new Uint8Array(buffer));
  renameSync(tmp, path);
}

function writeSidecar(path: string, samples: PlannedSample[], tokenizer: DemoTokenizer): void {
  const lines = samples.map((s) =>
    pyDumps(
      {
        sample_index: s.index,
        group_index: s.groupIndex,
        status: s.status,
        reward: new PyFloat(s.reward),
        prompt: s.conversation.prompt as unknown as PyJson,
        messages: generatedMessages(s, tokenizer) as unknown as PyJson,
      },
      { compact: true },
    ),
  );
  writeFileSync(path, lines.join('\n') + '\n');
}

/** Equal-size DP shards balanced by sequence length (largest first into the lightest shard); rows by index. */
export function partitionByDp(samples: PlannedSample[], dp: number): PlannedSample[][] {
  const cap = Math.ceil(samples.length / dp);
  const shards: PlannedSample[][] = Array.from({ length: dp }, () => []);
  const load = new Array(dp).fill(0);
  const order = [...samples].sort((a, b) => b.tokens.length - a.tokens.length || a.index - b.index);
  for (const s of order) {
    let best = -1;
    for (let d = 0; d < dp; d++) if (shards[d].length < cap && (best < 0 || load[d] < load[best])) best = d;
    shards[best].push(s);
    load[best] += s.tokens.length;
  }
  for (const shard of shards) shard.sort((a, b) => a.index - b.index);
  return shards;
}

function cpSlice(values: Float32Array | Float64Array, s: PlannedSample, cpSize: number, cpRank: number): Float32Array {
  if (cpSize === 1) return Float32Array.from(values);
  const parts = cpResponseRanges(s.tokens.length, s.responseLength, cpSize, cpRank);
  const n = parts.reduce((a, [lo, hi]) => a + hi - lo, 0);
  const out = new Float32Array(n);
  let o = 0;
  for (const [lo, hi] of parts) {
    out.set(values.subarray(lo, hi), o);
    o += hi - lo;
  }
  return out;
}

export interface StepDumpPaths {
  rollout: string;
  evalRollout: string | null;
  train: string[];
}

/** Writes every dump of `step` in the order training does; the train companion `{id}_0.pt` lands last. */
export async function writeStepDumps(runDir: string, plan: RunPlan, step: StepPlan): Promise<StepDumpPaths> {
  const { config, tokenizer } = plan;
  for (const d of STEP_DIRS) mkdirSync(join(runDir, d), { recursive: true });
  let evalRollout: string | null = null;
  if (step.evalSamples.length) {
    const stats = step.evalSamples.map((s) => tokenStats(config.seed, step.step, s, 0));
    writeSidecar(join(runDir, trajectoryFile(step.step, true)), step.evalSamples, tokenizer);
    writeParquetMirror(join(runDir, mirrorFile(step.step, true)), step.evalSamples, stats);
    evalRollout = join(runDir, rolloutFile(step.step, true));
    await saveTorch({ rollout_id: step.step, metadata: {}, samples: step.evalSamples.map((s, i) => sampleDict(s, stats[i], tokenizer)) }, evalRollout);
  }
  const advantages = grpoAdvantages(step.samples);
  const stats = step.samples.map((s) => tokenStats(config.seed, step.step, s, advantages.get(s.index)!));
  writeSidecar(join(runDir, trajectoryFile(step.step, false)), step.samples, tokenizer);
  writeParquetMirror(join(runDir, mirrorFile(step.step, false)), step.samples, stats);
  const rollout = join(runDir, rolloutFile(step.step, false));
  await saveTorch(
    {
      rollout_id: step.step,
      metadata: { rollout_time: new PyFloat(Math.round((step.rolloutEnd - step.rolloutStart) * 1000) / 1000), partial_rollout_samples: step.dataBufferLength },
      samples: step.samples.map((s, i) => sampleDict(s, stats[i], tokenizer)),
    },
    rollout,
  );
  const train = await writeTrainDumps(runDir, config.layout, step, stats);
  return { rollout, evalRollout, train };
}

async function writeTrainDumps(runDir: string, layout: ClusterLayout, step: StepPlan, stats: TokenStats[]): Promise<string[]> {
  const { pp, cp, dp } = layout.train;
  const statOf = new Map(step.samples.map((s, i) => [s.index, stats[i]]));
  const shards = partitionByDp(step.samples, dp);
  const rawReward = step.samples.map((s) => new PyFloat(s.reward));
  const paths: string[] = [];
  const ranks = Array.from({ length: worldSize(layout) }, (_, r) => r);
  // Rank 0 (the companion the reader waits for) is written last.
  ranks.push(ranks.shift()!);
  for (const rank of ranks) {
    const c = rankCoords(layout, rank);
    const rows = shards[c.dp];
    const last = c.pp === pp - 1;
    const per = (f: (s: PlannedSample, st: TokenStats) => Float32Array | Float64Array) => rows.map((s) => tensor('float32', cpSlice(f(s, statOf.get(s.index)!), s, cp, c.cp)));
    const rolloutData: Record<string, Picklable> = {
      tokens: rows.map((s) => tensor('int64', BigInt64Array.from(s.tokens, (x) => BigInt(x)))),
      response_lengths: rows.map((s) => s.responseLength),
      rewards: rows.map((s) => new PyFloat(statOf.get(s.index)!.advantage)),
      truncated: rows.map((s) => (s.status === 'truncated' ? 1 : 0)),
      loss_masks: rows.map((s) => tensor('int32', Int32Array.from(s.lossMask))),
      sample_indices: rows.map((s) => s.index),
      rollout_ids: rows.map((s) => s.index),
      rollout_mask_sums: rows.map((s) => s.lossMask.reduce((a, b) => a + b, 0)),
      rollout_log_probs: per((_, st) => st.rolloutLogProbs),
      weight_versions: rows.map((s) => [...s.weightVersions]),
      raw_reward: rawReward,
      total_lengths: rows.map((s) => s.tokens.length),
    };
    if (last) {
      rolloutData.log_probs = per((_, st) => st.logProbs);
      rolloutData.ref_log_probs = per((_, st) => st.refLogProbs);
      rolloutData.advantages = per((s, st) => new Float32Array(s.responseLength).fill(st.advantage));
      rolloutData.returns = per((s, st) => new Float32Array(s.responseLength).fill(st.advantage));
      rolloutData.entropy = per((_, st) => st.entropy);
    }
    const path = join(runDir, trainFile(step.step, rank));
    await saveTorch({ rollout_id: step.step, rank, rollout_data: rolloutData, cp_rank: c.cp, cp_size: cp, qkv_format: 'thd' }, path);
    paths.push(path);
  }
  return paths;
}
