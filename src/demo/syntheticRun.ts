// A large synthetic run in the real on-disk format, in the shape the reference was benchmarked on
// (1,024 GPUs = 128 nodes x 8, 1 Hz gpu_util, 128 engines scraped every 2 s, a 6-minute step),
// streamed to disk hour by hour so memory stays flat however long the run is.
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { planCluster } from './clusterLayout.ts';
import { generatedMessages, writeStepDumps } from './demoDumps.ts';
import { type PlannedSample, type StepPlan, demoConfig, longSampleGroup } from './demoPlan.ts';
import { demoTokenizer } from './vocabulary.ts';
import { SeededRandom } from './random.ts';
import {
  OPEN_T1,
  type EngineInfo,
  type LaneCatalogEntry,
  DEFAULT_ENGINE_METRICS,
  dataBufferLine,
  engineSamplePrefix,
  engineSampleRest,
  gpuProcessLine,
  gpuUtilPrefix,
  gpuUtilRest,
  laneCatalogJson,
  metaJson,
  metricsLine,
  phaseLine,
  topologyLine,
  trajectoryLine,
} from '../formats/dashboard/index.ts';
import { TelemetryWriter } from './telemetryWriter.ts';
import { DashboardWriter } from '../formats/dashboard/writer.ts';
import { CollectorSidecars } from '../formats/columns/sidecarWriter.ts';
import { STEP_DIRS, TOKENIZER_DIR, TOKENIZER_FILE } from '../formats/miles/layout.ts';

export interface SyntheticRunOptions {
  /** GPUs in the fleet (a multiple of `gpusPerNode`); default 1,024. */
  gpus?: number;
  gpusPerNode?: number;
  /** Run length in hours (default 6; 24 for the long variant). */
  hours?: number;
  /** sglang engines (default one per node). */
  engines?: number;
  /** Seconds per RL step (default 360). */
  stepSeconds?: number;
  /** Samples (trajectory lanes) per step (default 1,024). */
  samplesPerStep?: number;
  /** Also write per-process VRAM every 5 s (off by default: it doubles the GPU rows). */
  gpuProcesses?: boolean;
  /**
   * Dump this many steps (default 0): rollout `.pt`, parquet mirror, trajectory sidecar and one
   * train `.pt` per rank (TP 2 x PP 2 duplicates of gpus/4 DP shards), plus `tokenizer/`.
   */
  dumpSteps?: number;
  /**
   * Also write what rlsight's collector writes beside the partitions (gpu_util rollups, engine_series and
   * phases columns), through the collector's own code, as if the run had been recorded by `rlsight collect`.
   */
  collectorFiles?: boolean;
  /** Samples per dumped step (default 4,096). */
  dumpSamples?: number;
  /** Mean response tokens per dumped sample (default 3,900). */
  dumpResponseTokens?: number;
  seed?: number;
  /** Epoch seconds the run ends at (default: a minute ago). */
  now?: number;
  onProgress?: (message: string) => void;
}

export interface SyntheticRunInfo {
  runDir: string;
  gpus: number;
  engines: number;
  startTs: number;
  endTs: number;
  steps: number;
  /** Rows written per stream. */
  rows: Record<string, number>;
  totalRows: number;
  bytes: number;
  seconds: number;
}

/** The sglang whitelist, in the scraper's order (all 23 names). */
const ENGINE_METRICS = DEFAULT_ENGINE_METRICS;

const INIT_SECONDS = 240;
const ROLLOUT_FRACTION = 0.55;

function nodeIp(n: number): string {
  return `10.0.${Math.floor(n / 250)}.${(n % 250) + 1}`;
}

/** A per-step schedule shared by every stream: rollout, then training on every rank. */
interface StepSchedule {
  step: number;
  t0: number;
  rolloutEnd: number;
  /** When each engine's last request finished (the long tail drains engines one by one). */
  drain: Float64Array;
  trainStart: Float64Array;
  actorStart: Float64Array;
  actorEnd: Float64Array;
  updateEnd: Float64Array;
  stepEnd: number;
}

function schedule(seed: number, step: number, t0: number, stepSeconds: number, engines: number, ranks: number): StepSchedule {
  const rng = SeededRandom.derive(seed, 'synthetic-step', step);
  const rollout = stepSeconds * ROLLOUT_FRACTION * rng.uniform(0.9, 1.08);
  const drain = new Float64Array(engines);
  for (let e = 0; e < engines; e++) drain[e] = t0 + rollout * (0.45 + 0.5 * Math.pow(rng.next(), 2));
  drain[Math.floor(rng.next() * engines)] = t0 + rollout;
  const rolloutEnd = t0 + rollout + 0.4;
  const trainStart = new Float64Array(ranks);
  const actorStart = new Float64Array(ranks);
  const actorEnd = new Float64Array(ranks);
  const updateEnd = new Float64Array(ranks);
  const straggler = Math.floor(rng.next() * ranks);
  const actorT0 = rolloutEnd + 12 + rng.uniform(0, 2);
  const actorT1 = actorT0 + stepSeconds * 0.3 * rng.uniform(0.95, 1.05);
  const updT1 = actorT1 + 11 + rng.uniform(0, 2);
  for (let r = 0; r < ranks; r++) {
    trainStart[r] = rolloutEnd + 0.3 + rng.uniform(0, 0.5) + (r === straggler ? 9 : 0);
    actorStart[r] = Math.max(trainStart[r] + 0.5, actorT0 + rng.uniform(0, 0.2));
    actorEnd[r] = actorT1 + rng.uniform(0, 0.3);
    updateEnd[r] = updT1 + rng.uniform(0, 0.3);
  }
  return { step, t0, rolloutEnd, drain, trainStart, actorStart, actorEnd, updateEnd, stepEnd: t0 + stepSeconds };
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

/**
 * Generates the synthetic run into `outDir`: every telemetry stream, `meta.json` and
 * `lane_catalog.json` (no dumps). Streams are written in time order, one hour partition at a time.
 */
export async function generateSyntheticRun(outDir: string, opts: SyntheticRunOptions = {}): Promise<SyntheticRunInfo> {
  const began = performance.now();
  const gpus = opts.gpus ?? 1024;
  const perNode = opts.gpusPerNode ?? 8;
  if (!Number.isInteger(gpus) || gpus <= 0 || gpus % perNode !== 0) throw new RangeError(`gpus must be a positive multiple of ${perNode}, got ${gpus}`);
  const nodes = gpus / perNode;
  const engines = opts.engines ?? nodes;
  if (!Number.isInteger(engines) || engines <= 0 || gpus % engines !== 0) throw new RangeError(`engines must divide gpus (${gpus}), got ${engines}`);
  const hours = opts.hours ?? 6;
  if (!(hours > 0)) throw new RangeError(`hours must be positive, got ${hours}`);
  const stepSeconds = opts.stepSeconds ?? 360;
  const samplesPerStep = opts.samplesPerStep ?? 1024;
  const seed = opts.seed ?? 0;
  const progress = opts.onProgress ?? (() => {});
  const duration = Math.round(hours * 3600);
  const endTs = Math.floor(opts.now ?? Date.now() / 1000 - 60);
  const startTs = endTs - duration;
  const gpusPerEngine = gpus / engines;
  const nodeNames = Array.from({ length: nodes }, (_, n) => nodeIp(n));
  const engineAddr = (e: number) => `http://${nodeNames[Math.floor((e * gpusPerEngine) / perNode)]}:${15000 + ((e * gpusPerEngine) % perNode)}`;

  const dashboard = join(outDir, 'dashboard');
  mkdirSync(dashboard, { recursive: true });
  writeFileSync(
    join(dashboard, 'meta.json'),
    metaJson('synthetic-1k-gpu', startTs, {
      wandb_group: 'synthetic-1k-gpu',
      colocate: true,
      num_gpus_per_node: perNode,
      actor_num_nodes: nodes,
      actor_num_gpus_per_node: perNode,
      rollout_num_gpus: gpus,
      rollout_num_gpus_per_engine: gpusPerEngine,
      rollout_batch_size: samplesPerStep / 8,
      n_samples_per_prompt: 8,
      rollout_max_response_len: 8192,
      sglang_max_running_requests: 128,
    }),
  );
  // the collector's sidecars, on the run's own clock (the growing hour is written as the clock passes a minute)
  let clock = startTs;
  const sidecars = opts.collectorFiles ? collectorSidecars(dashboard, () => clock) : null;
  const writer = new TelemetryWriter(dashboard, 16 << 20, sidecars);
  const rows: Record<string, number> = {};
  const count = (stream: string, n = 1) => (rows[stream] = (rows[stream] ?? 0) + n);

  // Topology: every engine at start.
  const topo: EngineInfo[] = [];
  for (let e = 0; e < engines; e++) {
    const g0 = e * gpusPerEngine;
    const gpusOf: [string, number][] = [];
    for (let g = g0; g < g0 + gpusPerEngine; g++) gpusOf.push([nodeNames[Math.floor(g / perNode)], g % perNode]);
    topo.push({ addr: engineAddr(e), worker_type: 'regular', engine_rank: e, gpus: gpusOf, gpu_uuids: gpusOf.map(() => null) });
  }
  writer.appendSingle('topology', topologyLine(startTs + INIT_SECONDS - 30, topo));
  count('topology');

  // Steps fill the run after initialization.
  const steps: StepSchedule[] = [];
  for (let t = startTs + INIT_SECONDS, s = 0; t + stepSeconds <= endTs; t += stepSeconds, s++) steps.push(schedule(seed, s, t, stepSeconds, engines, gpus));

  const counters = new Float64Array(engines * 10);
  const rng = SeededRandom.derive(seed, 'synthetic-noise');
  // Cheap per-row noise: a table of small ints cycled with a stride.
  const noise = Int8Array.from({ length: 4096 }, () => Math.round(rng.normal(0, 2)));
  let ni = 0;

  const stepAt = (t: number): StepSchedule | null => {
    const i = Math.floor((t - startTs - INIT_SECONDS) / stepSeconds);
    return i >= 0 && i < steps.length ? steps[i] : null;
  };

  // Phases and trajectory events of a step are written when the clock passes its end.
  let nextStepToEmit = 0;
  const emitStep = (s: StepSchedule) => {
    const ph = (name: string, t0: number, t1: number, node: string, gpusList: number[], rank: number, role: 'train' | 'rollout_manager', open: boolean) => {
      if (open) {
        writer.appendPartitioned('phases', r3(t0), phaseLine({ name, t0: r3(t0), t1: OPEN_T1, node, gpus: gpusList, rank, role }));
        count('phases');
      }
      writer.appendPartitioned('phases', r3(t1), phaseLine({ name, t0: r3(t0), t1: r3(t1), node, gpus: gpusList, rank, role }));
      count('phases');
    };
    ph('rollout', s.t0, s.rolloutEnd, '10.0.255.1', [], -1, 'rollout_manager', true);
    const prevEnd = s.step === 0 ? null : steps[s.step - 1].updateEnd;
    for (let r = 0; r < gpus; r++) {
      const node = nodeNames[Math.floor(r / perNode)];
      const g = [r % perNode];
      const waitT0 = prevEnd ? prevEnd[r] : startTs + INIT_SECONDS - 5;
      ph('train_wait', waitT0, s.trainStart[r], node, g, r, 'train', false);
      ph('actor_train', s.actorStart[r], s.actorEnd[r], node, g, r, 'train', true);
      ph('update_weights', s.actorEnd[r], s.updateEnd[r], node, g, r, 'train', true);
      // The next train_wait opens now and closes in the next step.
      writer.appendPartitioned('phases', r3(s.updateEnd[r]), phaseLine({ name: 'train_wait', t0: r3(s.updateEnd[r]), t1: OPEN_T1, node, gpus: g, rank: r, role: 'train' }));
      count('phases');
    }
    const trng = SeededRandom.derive(seed, 'synthetic-traj', s.step);
    const traj: { ts: number; line: string }[] = [];
    const rollout = s.rolloutEnd - s.t0 - 0.4;
    for (let i = 0; i < samplesPerStep; i++) {
      const index = s.step * samplesPerStep + i;
      const group = Math.floor(index / 8);
      const v = String(s.step);
      const a0 = s.t0 + trng.uniform(0, 2);
      const g0 = a0 + trng.uniform(0.1, 3);
      let t = g0 + 0.05;
      const turns = trng.chance(0.65) ? 2 : 1;
      const ev = (ts: number, kind: 'attempt_start' | 'gen_start' | 'gen_end' | 'tool_start' | 'tool_end' | 'attempt_end', turn: number, wv: string, detail: string) =>
        traj.push({ ts: r3(ts), line: trajectoryLine({ ts: r3(ts), kind, sample_index: index, group_index: group, turn, weight_version: wv, detail }) });
      ev(a0, 'attempt_start', -1, '', '');
      ev(g0, 'gen_start', -1, '', '');
      const budget = rollout * (0.2 + 0.75 * Math.pow(trng.next(), 3));
      for (let k = 1; k <= turns; k++) {
        const gen = (budget / turns) * trng.uniform(0.7, 1);
        ev(t, 'gen_start', k, v, '');
        ev(t + gen, 'gen_end', k, v, String(Math.round(gen * 30)));
        t += gen;
        if (k < turns) {
          const tool = trng.uniform(0.5, 6);
          ev(t, 'tool_start', k, v, '1 calls');
          ev(t + tool, 'tool_end', k, v, '1 calls');
          t += tool;
        }
      }
      ev(Math.min(t, s.rolloutEnd - 0.4), 'attempt_end', -1, v, trng.chance(0.04) ? 'truncated' : 'completed');
    }
    traj.sort((a, b) => a.ts - b.ts);
    for (const e of traj) writer.appendPartitioned('trajectories', e.ts, e.line);
    count('trajectories', traj.length);
    writer.appendSingle('data_buffer', dataBufferLine(r3(s.t0 - 0.1), 0));
    count('data_buffer');
    const mrng = SeededRandom.derive(seed, 'synthetic-metrics', s.step);
    const metrics: Record<string, number> = { 'rollout/step': s.step };
    const f = (k: string, v: number) => (metrics[k] = Math.round(v * 1e6) / 1e6);
    f('perf/step_time', stepSeconds);
    f('perf/rollout_time', s.rolloutEnd - s.t0);
    f('perf/train_time', s.updateEnd[0] - s.rolloutEnd);
    f('perf/actor_train_time', s.actorEnd[0] - s.actorStart[0]);
    f('perf/update_weights_time', s.updateEnd[0] - s.actorEnd[0]);
    f('perf/wait_time_ratio', (s.rolloutEnd - s.t0) / stepSeconds);
    f('perf/actor_train_mfu', 0.31 + 0.03 * mrng.next());
    f('perf/actor_train_tflops', 989 * (0.31 + 0.03 * mrng.next()));
    f('perf/mfu_peak_tflops', 989);
    f('perf/tokens_per_gpu_per_sec', 1650 + 120 * mrng.next());
    f('perf/log_probs_time', 18 + 3 * mrng.next());
    f('perf/ref_log_probs_time', 17 + 3 * mrng.next());
    for (const name of ['rewards_mean', 'raw_reward', 'response_len/mean', 'response_len/max', 'response_len/p50', 'response_len/p90', 'truncated_ratio', 'zero_std_group_ratio', 'tool_calls_mean', 'aborted_samples', 'log_probs', 'entropy', 'rollout_time', 'gen_throughput', 'partial_ratio']) {
      f(`rollout/${name}`, mrng.uniform(0, 1) * (name.startsWith('response_len') ? 8000 : 1) + s.step * 0.001);
    }
    writer.appendSingle('metrics', metricsLine(r3(s.updateEnd[0] + 1), 'rollout/step', s.step, metrics));
    const train: Record<string, number> = { 'train/step': s.step };
    for (const name of ['loss', 'pg_loss', 'entropy_loss', 'pg_clipfrac', 'ppo_kl', 'kl_loss', 'grad_norm', 'lr-pg', 'train_rollout_logprob_abs_diff', 'ois', 'tis_clipfrac', 'adv_mean', 'adv_std', 'values', 'returns', 'response_len', 'importance_ratio', 'entropy', 'seq_len', 'tokens', 'num_samples']) {
      train[`train/${name}`] = Math.round(mrng.normal(0.1, 0.05) * 1e6) / 1e6;
    }
    writer.appendSingle('metrics', metricsLine(r3(s.actorEnd[0] + 0.5), 'train/step', s.step, train));
    count('metrics', 2);
  };

  let lastReport = performance.now();
  for (let sec = 0; sec < duration; sec++) {
    const base = startTs + sec;
    const s = stepAt(base);
    clock = base;
    if (sidecars !== null && base % 3600 === 0) {
      // an hour completed: its sidecars are written and its rows let go
      writer.flush();
      sidecars.write();
    }
    // GPU samples: all GPUs of a node share the tick timestamp.
    for (let n = 0; n < nodes; n++) {
      const ts = r3(base + 0.25 + 0.003 * (n % 100));
      const node = nodeNames[n];
      const head = gpuUtilPrefix(ts, node);
      for (let g = 0; g < perNode; g++) {
        const rank = n * perNode + g;
        const engine = Math.floor(rank / gpusPerEngine);
        let util: number;
        let mem: number;
        if (!s) {
          util = sec < INIT_SECONDS * 0.5 ? 0 : 12;
          mem = sec < INIT_SECONDS * 0.4 ? 0 : 30000;
        } else if (ts < s.rolloutEnd) {
          util = ts < s.drain[engine] ? 91 : 2;
          mem = 66500;
        } else if (ts < s.trainStart[rank]) {
          util = 0;
          mem = 1900;
        } else if (ts < s.actorStart[rank]) {
          util = 78;
          mem = 41000;
        } else if (ts < s.actorEnd[rank]) {
          util = 95;
          mem = 71000;
        } else if (ts < s.updateEnd[rank]) {
          util = 45;
          mem = 52000;
        } else {
          util = 1;
          mem = 1900;
        }
        const d = noise[ni++ & 4095];
        util = util + d < 0 ? 0 : util + d > 100 ? 100 : util + d;
        writer.appendPartitioned('gpu_util', ts, gpuUtilRest(head, g, util, mem + d * 13, 90 + util * 6 + d));
      }
      count('gpu_util', perNode);
      if (opts.gpuProcesses && sec % 5 === 0) {
        for (let g = 0; g < perNode; g++) {
          writer.appendPartitioned('gpu_processes', ts, gpuProcessLine(ts, node, g, 4000 + g, 'sglang::scheduler', s && ts < s.rolloutEnd ? 66000 : 1200));
          writer.appendPartitioned('gpu_processes', ts, gpuProcessLine(ts, node, g, 5000 + g, 'ray::MegatronTrainRayActor', s && ts >= s.rolloutEnd ? 52000 : 1900));
        }
        count('gpu_processes', 2 * perNode);
      }
    }
    // Engine scrape every 2 s, one timestamp for the whole tick.
    if (sec % 2 === 0 && sec >= INIT_SECONDS - 30) {
      const ts = r3(base + 0.5);
      for (let e = 0; e < engines; e++) {
        const busy = s !== null && ts >= s.t0 && ts < s.drain[e];
        const frac = busy ? 1 - (ts - s!.t0) / (s!.drain[e] - s!.t0) : 0;
        const running = busy ? Math.max(1, Math.round(96 * Math.sqrt(frac))) : 0;
        const c = e * 10;
        if (busy) {
          counters[c] += running * 2 * 40; // prompt tokens
          counters[c + 1] += running * 2 * 38; // generated tokens
          counters[c + 2] += Math.round(running / 12); // finished requests
          counters[c + 3] += running * 2 * 0.0009; // ttft sum
          counters[c + 4] += Math.round(running / 12);
          counters[c + 5] += running * 2 * 38 * 0.026; // itl sum
          counters[c + 6] += running * 2 * 38;
          counters[c + 7] += Math.round(running / 12) * 0.027;
          counters[c + 8] += Math.round(running / 12) * 24.5;
        }
        const values = [
          running,
          busy && frac > 0.9 ? 12 : 0,
          running * 37.5,
          busy ? 0.35 + 0.5 * frac : 0.01,
          busy ? 0.42 : 0,
          0,
          0,
          0,
          0,
          0,
          0,
          counters[c],
          counters[c + 1],
          counters[c + 2],
          counters[c + 9],
          counters[c + 3],
          counters[c + 4],
          counters[c + 5],
          counters[c + 6],
          counters[c + 7],
          counters[c + 4],
          counters[c + 8],
          counters[c + 4],
        ];
        const head = engineSamplePrefix(ts, engineAddr(e));
        for (let m = 0; m < ENGINE_METRICS.length; m++) {
          writer.appendPartitioned('engine_series', ts, engineSampleRest(head, ENGINE_METRICS[m], '{}', Math.round(values[m] * 1000) / 1000));
        }
      }
      count('engine_series', engines * ENGINE_METRICS.length);
    }
    while (nextStepToEmit < steps.length && steps[nextStepToEmit].stepEnd <= base + 1) emitStep(steps[nextStepToEmit++]);
    if (performance.now() - lastReport > 5000) {
      lastReport = performance.now();
      progress(`synthetic run: ${((100 * sec) / duration).toFixed(0)}% (${(writer.bytes / 2 ** 30).toFixed(2)} GiB written)`);
    }
  }
  while (nextStepToEmit < steps.length) emitStep(steps[nextStepToEmit++]);
  writer.close();
  sidecars?.write(true);

  const dumpSteps = Math.min(opts.dumpSteps ?? 0, steps.length);
  for (let s = 0; s < dumpSteps; s++) {
    await writeSyntheticDump(outDir, { seed, step: s, gpus, perNode, samples: opts.dumpSamples ?? 4096, meanResponse: opts.dumpResponseTokens ?? 3900, rollout: steps[s].rolloutEnd - steps[s].t0 });
    progress(`synthetic run: dumped step ${s + 1}/${dumpSteps}`);
  }

  const lanes = new Map<string, LaneCatalogEntry>();
  for (let r = 0; r < gpus; r++) {
    const e = Math.floor(r / gpusPerEngine);
    lanes.set(`${nodeNames[Math.floor(r / perNode)]}:${r % perNode}`, { ranks: new Set([r]), engineAddrs: new Set([engineAddr(e)]), roles: new Set(['rollout', 'train']) });
  }
  writeFileSync(join(dashboard, 'lane_catalog.json.tmp'), laneCatalogJson(lanes));
  renameSync(join(dashboard, 'lane_catalog.json.tmp'), join(dashboard, 'lane_catalog.json'));

  let bytes = writer.bytes;
  for (const f of ['meta.json', 'lane_catalog.json']) bytes += statSync(join(dashboard, f)).size;
  if (dumpSteps > 0) for (const d of [...STEP_DIRS, TOKENIZER_DIR]) bytes += folderBytes(join(outDir, d));
  return {
    runDir: outDir,
    gpus,
    engines,
    startTs,
    endTs,
    steps: steps.length,
    rows,
    totalRows: Object.values(rows).reduce((a, b) => a + b, 0),
    bytes,
    seconds: (performance.now() - began) / 1000,
  };
}

/** The collector's sidecar writers over `dashboard` (atomic replaces, as the collector makes them). */
function collectorSidecars(dashboard: string, now: () => number): CollectorSidecars {
  const files = new DashboardWriter(dashboard);
  return new CollectorSidecars({ replace: (rel, data) => files.replace(rel, data), remove: (rel) => files.remove(rel), read: (rel) => readFileSync(join(dashboard, rel)) }, now);
}

/** Beside `dashboard/`: what a reusable synthetic run was generated with and what it holds. */
export const SYNTHETIC_RUN_RECORD = 'synthetic-run.json';

/**
 * The synthetic run at `outDir`, generated once and reused while it was made with the same options
 * (benchmarks measure reads, not generation). `now` defaults to the last whole UTC hour, so a reused
 * run keeps its clock and hour windows end exactly on partition boundaries.
 */
export async function reusableSyntheticRun(outDir: string, opts: Omit<SyntheticRunOptions, 'onProgress'> = {}, onProgress?: (message: string) => void): Promise<SyntheticRunInfo & { reused: boolean }> {
  const record = join(outDir, SYNTHETIC_RUN_RECORD);
  const want = { ...opts, now: opts.now ?? Math.floor(Date.now() / 1000 / 3600) * 3600 };
  if (existsSync(record)) {
    const saved = JSON.parse(readFileSync(record, 'utf8')) as { options: typeof opts; info: SyntheticRunInfo };
    const keys = new Set([...Object.keys(saved.options), ...Object.keys(opts)] as (keyof typeof opts)[]);
    const same = [...keys].every((k) => (k === 'now' && opts.now === undefined) || saved.options[k] === opts[k]);
    if (same && existsSync(join(outDir, 'dashboard'))) return { ...saved.info, reused: true };
  }
  // Only a run this function made is ever replaced; anything else at `outDir` is left alone.
  if (!existsSync(record) && existsSync(join(outDir, 'dashboard'))) throw new Error(`${outDir} holds a run without ${SYNTHETIC_RUN_RECORD}; pass a new or empty directory`);
  rmSync(join(outDir, 'dashboard'), { recursive: true, force: true });
  rmSync(record, { force: true });
  const info = await generateSyntheticRun(outDir, { ...want, onProgress });
  writeFileSync(record, JSON.stringify({ options: want, info }));
  return { ...info, reused: false };
}

function folderBytes(dir: string): number {
  let n = 0;
  for (const name of readdirSync(dir)) {
    const st = statSync(join(dir, name));
    n += st.isDirectory() ? folderBytes(join(dir, name)) : st.size;
  }
  return n;
}

interface DumpShape {
  seed: number;
  step: number;
  gpus: number;
  perNode: number;
  samples: number;
  meanResponse: number;
  rollout: number;
}

/** One dumped step at benchmark scale, through the same writers as the demo. */
async function writeSyntheticDump(outDir: string, shape: DumpShape): Promise<void> {
  const tokenizer = demoTokenizer();
  const config = {
    ...demoConfig({ seed: shape.seed }),
    layout: planCluster(shape.gpus / shape.perNode, shape.perNode, 8, { tp: 2, pp: 2, cp: 1 }),
    maxResponseLen: Math.round(shape.meanResponse * 1.6),
  };
  if (shape.step === 0) {
    mkdirSync(join(outDir, TOKENIZER_DIR), { recursive: true });
    writeFileSync(join(outDir, TOKENIZER_FILE), JSON.stringify(tokenizer.tokenizerJson()));
    writeFileSync(join(outDir, TOKENIZER_DIR, 'tokenizer_config.json'), JSON.stringify(tokenizer.tokenizerConfig()));
  }
  const rng = SeededRandom.derive(shape.seed, 'synthetic-dump', shape.step);
  const samples: PlannedSample[] = [];
  const perGroup = 8;
  for (let g = 0; g * perGroup < shape.samples; g++) {
    const n = Math.min(perGroup, shape.samples - g * perGroup);
    const lengths = Array.from({ length: n }, () => Math.max(64, Math.min(config.maxResponseLen, Math.round(rng.normal(shape.meanResponse, shape.meanResponse * 0.25)))));
    const first = shape.step * shape.samples + g * perGroup;
    for (const s of longSampleGroup(config, tokenizer, shape.step, first / perGroup, first, n, lengths)) {
      // Cut at its own length, a sample has finished; only the cap makes it truncated.
      s.conversation = { ...s.conversation, messages: generatedMessages(s, tokenizer) };
      if (s.responseLength < config.maxResponseLen) s.status = 'completed';
      samples.push(s);
    }
  }
  const step: StepPlan = {
    step: shape.step,
    index: shape.step,
    start: 0,
    evalWindow: null,
    evalSamples: [],
    rolloutStart: 0,
    rolloutEnd: shape.rollout,
    samples,
    carriedOut: [],
    restart: null,
    ranks: [],
    trainEnd: 0,
    enginePorts: [],
    dataBufferLength: 0,
  };
  await writeStepDumps(outDir, { config, tokenizer, steps: [step] }, step);
}
