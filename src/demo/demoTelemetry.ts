// Writes the `dashboard/` telemetry of a planned demo run: what the collector, the GPU samplers,
// the sglang scraper and the phase/trajectory sinks would have appended while it ran.
import { entropyLossAt, lossAt } from './metricHistory.ts';
import { type ClusterLayout, engineAddr, rankCoords, worldSize } from './clusterLayout.ts';
import type { Attempt, PlannedSample, RunPlan, StepPlan } from './demoPlan.ts';
import { SeededRandom } from './random.ts';
import type { TelemetryWriter } from './telemetryWriter.ts';
import {
  OPEN_T1,
  type EngineInfo,
  type LaneCatalogEntry,
  type PhaseEvent,
  type TrajectoryEvent,
  dataBufferLine,
  engineLabelsJson,
  engineSampleLine,
  gpuProcessLine,
  gpuUtilLine,
  laneCatalogJson,
  metricsLine,
  phaseLine,
  phasePartitionTs,
  topologyLine,
  trajectoryLine,
} from '../formats/dashboard/index.ts';

const round3 = (x: number) => Math.round(x * 1000) / 1000;
const GPU_MEM_MB = 81559;
const SGLANG_POOL_MB = 66110;
const KV_CAPACITY_TOKENS = 14000;

/** Cumulative sglang counters of one engine dp rank. */
interface EngineCounters {
  prompt: number;
  generation: number;
  requests: number;
  aborted: number;
  ttftSum: number;
  ttftCount: number;
  itlSum: number;
  itlCount: number;
  tpotSum: number;
  tpotCount: number;
  e2eSum: number;
  e2eCount: number;
}

const zeroCounters = (): EngineCounters => ({
  prompt: 0,
  generation: 0,
  requests: 0,
  aborted: 0,
  ttftSum: 0,
  ttftCount: 0,
  itlSum: 0,
  itlCount: 0,
  tpotSum: 0,
  tpotCount: 0,
  e2eSum: 0,
  e2eCount: 0,
});

/** One generation request (one turn of one attempt) as an engine sees it. */
interface EngineRequest {
  engine: number;
  dp: number;
  queued: number;
  t0: number;
  end: number;
  ttft: number;
  tokens: number;
  rate: number;
  context: number;
  aborted: boolean;
  laterTurn: boolean;
}

/** What the run has accumulated before a step: counters per engine addr and dp rank, ports in use. */
export interface TelemetryCarry {
  counters: Map<string, EngineCounters>;
  ports: number[];
}

export function initialCarry(layout: ClusterLayout): TelemetryCarry {
  return { counters: new Map(), ports: layout.engines.map((e) => e.port) };
}

function attemptsOf(step: StepPlan, windowStart: number): { sample: PlannedSample; attempt: Attempt }[] {
  const out: { sample: PlannedSample; attempt: Attempt }[] = [];
  for (const sample of [...step.evalSamples, ...step.samples, ...step.carriedOut]) {
    for (const attempt of sample.attempts) if (attempt.t0 >= windowStart) out.push({ sample, attempt });
  }
  return out;
}

function engineRequests(step: StepPlan, windowStart: number): EngineRequest[] {
  const out: EngineRequest[] = [];
  for (const { sample, attempt } of attemptsOf(step, windowStart)) {
    for (const turn of attempt.turns) {
      const aborted = attempt.status === 'aborted' && turn.genT1 >= attempt.t1 - 1e-9;
      const end = Math.min(turn.genT1, attempt.t1);
      const tokens = aborted ? Math.max(0, Math.floor((end - turn.genT0 - turn.ttft) * turn.rate)) : turn.completionTokens;
      out.push({
        engine: attempt.engine,
        dp: sample.dpRank,
        queued: attempt.t0,
        t0: turn.genT0,
        end,
        ttft: turn.ttft,
        tokens,
        rate: turn.rate,
        context: turn.context,
        aborted,
        laterTurn: turn.turn > 1,
      });
    }
  }
  return out;
}

/** Adds the contribution of request `r` as seen at time `t` (Infinity: its final totals). */
function addRequest(c: EngineCounters, r: EngineRequest, t: number): void {
  if (t < r.t0) return;
  c.prompt += r.context;
  if (t >= r.t0 + r.ttft) {
    c.ttftCount += 1;
    c.ttftSum += r.ttft;
  }
  const generated = Math.min(r.tokens, Math.max(0, Math.floor((Math.min(t, r.end) - r.t0 - r.ttft) * r.rate)));
  c.generation += generated;
  c.itlCount += generated;
  c.itlSum += generated / r.rate;
  if (t >= r.end) {
    c.requests += 1;
    if (r.aborted) c.aborted += 1;
    else {
      c.e2eCount += 1;
      c.e2eSum += r.end - r.t0;
      c.tpotCount += 1;
      c.tpotSum += r.tokens > 0 ? (r.end - r.t0 - r.ttft) / r.tokens : 0;
    }
  }
}

function addrAt(layout: ClusterLayout, step: StepPlan | null, carry: TelemetryCarry, engine: number, t: number): string | null {
  const slot = layout.engines[engine];
  const r = step?.restart;
  if (r && r.engine === engine) {
    if (t < r.failTs) return engineAddr(slot, r.oldPort);
    if (t < r.upTs) return null;
    return engineAddr(slot, r.newPort);
  }
  return engineAddr(slot, carry.ports[engine]);
}

export interface StepWindow {
  /** Relative seconds: ticks in [start, end) belong to this window. */
  start: number;
  end: number;
  /** null for the initialization before step 0. */
  step: StepPlan | null;
}

export class DemoTelemetry {
  readonly layout: ClusterLayout;
  readonly world: number;

  constructor(
    readonly plan: RunPlan,
    readonly startTs: number,
    readonly writer: TelemetryWriter,
  ) {
    this.layout = plan.config.layout;
    this.world = worldSize(this.layout);
  }

  private abs(rel: number): number {
    return round3(this.startTs + rel);
  }

  /** The window a step's telemetry covers (step 0 starts after initialization). */
  window(stepIndex: number): StepWindow {
    const step = this.plan.steps[stepIndex];
    const next = this.plan.steps[stepIndex + 1];
    return { start: step.start, end: next ? next.start : round3(step.trainEnd + 0.6), step };
  }

  initWindow(): StepWindow {
    return { start: 0, end: this.plan.steps[0].start, step: null };
  }

  topology(rel: number, ports: (number | null)[]): string {
    const engines: EngineInfo[] = [];
    this.layout.engines.forEach((slot, i) => {
      const port = ports[i];
      if (port === null) return;
      engines.push({
        addr: engineAddr(slot, port),
        worker_type: 'regular',
        engine_rank: engines.length,
        gpus: slot.gpus.map((g) => [slot.node, g] as [string, number]),
        gpu_uuids: slot.gpus.map((g) => `GPU-${hex(slot.node, g, slot.port === port ? 0 : port)}`),
      });
    });
    return topologyLine(this.abs(rel), engines);
  }

  /** Everything the run writes once, before its first step. */
  writeInitialization(carry: TelemetryCarry): void {
    const w = this.initWindow();
    this.writer.appendSingle('topology', this.topology(this.plan.config.initSeconds - 12.5, carry.ports));
    this.writeGpu(w, carry);
    this.writeEngines(w, carry);
    // Each rank opens train_wait once it is initialized; it closes when step 0's rollout is in.
    for (const r of this.plan.steps[0].ranks) {
      const tw = r.phases[0];
      this.writePhase({ name: 'train_wait', t0: tw.t0, t1: OPEN_T1, node: r.node, gpus: [r.gpu], rank: r.rank, role: 'train' });
    }
  }

  writeStep(stepIndex: number, carry: TelemetryCarry): void {
    const w = this.window(stepIndex);
    const step = w.step!;
    const phases: PhaseEvent[] = [];
    const manager = (name: string, t0: number, t1: number) => {
      phases.push({ name, t0, t1: OPEN_T1, node: this.layout.managerNode, gpus: [], rank: -1, role: 'rollout_manager' });
      phases.push({ name, t0, t1, node: this.layout.managerNode, gpus: [], rank: -1, role: 'rollout_manager' });
    };
    if (step.evalWindow) manager('eval_rollout', step.evalWindow[0], step.evalWindow[1]);
    manager('rollout', step.rolloutStart, step.rolloutEnd);
    for (const r of step.ranks) {
      const base = { node: r.node, gpus: [r.gpu], rank: r.rank, role: 'train' as const };
      r.phases.forEach((p, i) => {
        // train_wait's open marker was written when the previous step ended.
        if (i > 0) phases.push({ name: p.name, t0: p.t0, t1: OPEN_T1, ...base });
        phases.push({ name: p.name, t0: p.t0, t1: p.t1, ...base });
      });
      phases.push({ name: 'train_wait', t0: r.phases[r.phases.length - 1].t1, t1: OPEN_T1, ...base });
    }
    phases.sort((a, b) => phasePartitionTs(a) - phasePartitionTs(b));
    for (const p of phases) this.writePhase(p);

    if (step.restart) {
      const down = carry.ports.map((p, i) => (i === step.restart!.engine ? null : p));
      this.writer.appendSingle('topology', this.topology(step.restart.failTs + 1.2, down));
      const up = carry.ports.map((p, i) => (i === step.restart!.engine ? step.restart!.newPort : p));
      this.writer.appendSingle('topology', this.topology(step.restart.upTs + 0.8, up));
    }
    this.writer.appendSingle('data_buffer', dataBufferLine(this.abs(step.rolloutStart - 0.05), step.dataBufferLength));
    this.writeGpu(w, carry);
    this.writeEngines(w, carry);
    this.writeTrajectories(step, w.start);
    this.writeMetrics(step);
    this.advanceCarry(stepIndex, carry);
  }

  /** Folds a step's engine requests into the counters and ports the following steps start from. */
  advanceCarry(stepIndex: number, carry: TelemetryCarry): void {
    const w = this.window(stepIndex);
    const step = w.step!;
    for (const r of engineRequests(step, w.start)) {
      const addr = addrAt(this.layout, step, carry, r.engine, r.t0);
      if (addr === null) continue;
      const key = `${addr}|${r.dp}`;
      const c = carry.counters.get(key) ?? zeroCounters();
      addRequest(c, r, Infinity);
      carry.counters.set(key, c);
    }
    carry.ports = [...step.enginePorts];
  }

  /** `lane_catalog.json` for every GPU: its train rank and every engine that ever ran on it. */
  laneCatalog(): string {
    const lanes = new Map<string, LaneCatalogEntry>();
    for (let rank = 0; rank < this.world; rank++) {
      const node = this.layout.nodes[Math.floor(rank / this.layout.gpusPerNode)];
      lanes.set(`${node}:${rank % this.layout.gpusPerNode}`, { ranks: new Set([rank]), engineAddrs: new Set(), roles: new Set(['train']) });
    }
    const ports = this.layout.engines.map((e) => new Set([e.port]));
    for (const s of this.plan.steps) if (s.restart) ports[s.restart.engine].add(s.restart.newPort);
    this.layout.engines.forEach((slot, i) => {
      for (const g of slot.gpus) {
        const lane = lanes.get(`${slot.node}:${g}`)!;
        lane.roles.add('rollout');
        for (const p of ports[i]) lane.engineAddrs.add(engineAddr(slot, p));
      }
    });
    return laneCatalogJson(lanes);
  }

  private writePhase(p: PhaseEvent): void {
    this.writer.appendPartitioned('phases', this.abs(phasePartitionTs(p)), phaseLine({ ...p, t0: this.abs(p.t0), t1: p.t1 === OPEN_T1 ? OPEN_T1 : this.abs(p.t1) }));
  }

  private writeGpu(w: StepWindow, carry: TelemetryCarry): void {
    const { layout } = this;
    const step = w.step;
    const requests = step ? engineRequests(step, w.start) : [];
    const byEngine: EngineRequest[][] = layout.engines.map(() => []);
    for (const r of requests) byEngine[r.engine].push(r);
    const engineOf = new Map<string, number>();
    layout.engines.forEach((slot, i) => slot.gpus.forEach((g) => engineOf.set(`${slot.node}:${g}`, i)));
    const rng = SeededRandom.derive(this.plan.config.seed, 'gpu', step ? step.step : -1);
    const first = Math.ceil(w.start - 0.4);
    for (let k = first; k < w.end + 1; k++) {
      layout.nodes.forEach((node, n) => {
        const t = round3(k + 0.137 + 0.011 * n);
        if (t < w.start || t >= w.end) return;
        const running = new Map<number, number>();
        for (let g = 0; g < layout.gpusPerNode; g++) {
          const rank = n * layout.gpusPerNode + g;
          const engine = engineOf.get(`${node}:${g}`)!;
          if (!running.has(engine)) running.set(engine, byEngine[engine].filter((r) => r.t0 <= t && t < r.end).length);
          const s = this.gpuState(w, rank, engine, running.get(engine)!, t, rng);
          const ts = this.abs(t);
          this.writer.appendPartitioned('gpu_util', ts, gpuUtilLine(ts, node, g, s.util, s.sglangMb + s.trainMb + 410, s.power));
          if (k % 5 === 0) {
            const pidBase = 3100 + 97 * n;
            const addr = step ? addrAt(layout, step, carry, engine, t) : engineAddr(layout.engines[engine], carry.ports[engine]);
            if (s.sglangMb > 0 && addr !== null) {
              const restarted = addr.endsWith(String(layout.engines[engine].port)) ? 0 : 500;
              this.writer.appendPartitioned('gpu_processes', ts, gpuProcessLine(ts, node, g, pidBase + restarted + g, 'sglang::scheduler', s.sglangMb));
            }
            if (s.trainMb > 0) this.writer.appendPartitioned('gpu_processes', ts, gpuProcessLine(ts, node, g, pidBase + 40 + g, 'ray::MegatronTrainRayActor', s.trainMb));
          }
        }
      });
    }
  }

  private gpuState(w: StepWindow, rank: number, engine: number, running: number, t: number, rng: SeededRandom): { util: number; sglangMb: number; trainMb: number; power: number } {
    const noise = () => rng.normal(0, 2.2);
    const power = (util: number) => Math.round(Math.min(700, 92 + util * 5.7 + rng.normal(0, 9)));
    const clampUtil = (u: number) => Math.max(0, Math.min(100, Math.round(u)));
    const step = w.step;
    if (!step) {
      // Initialization: processes start, weights load, engines capture CUDA graphs.
      const f = t / w.end;
      const util = clampUtil(f < 0.35 ? 0 : f < 0.8 ? 9 + noise() : 35 + 20 * Math.sin(t) + noise());
      const sglang = f < 0.45 ? 0 : Math.round(SGLANG_POOL_MB * Math.min(1, (f - 0.45) * 3));
      const train = f < 0.2 ? 0 : f < 0.45 ? Math.round(31000 * ((f - 0.2) / 0.25)) : 1850;
      return { util, sglangMb: sglang, trainMb: train, power: power(util) };
    }
    const r = step.restart;
    const engineDown = r !== null && r.engine === engine && t >= r.failTs && t < r.upTs;
    const inRollout = (t >= step.rolloutStart && t <= step.rolloutEnd) || (step.evalWindow !== null && t >= step.evalWindow[0] && t <= step.evalWindow[1]);
    if (inRollout || t < step.rolloutStart) {
      if (engineDown) return { util: 0, sglangMb: 0, trainMb: 1850, power: power(0) };
      const util = running > 0 ? clampUtil(86 + 9 * Math.min(1, running / 6) + noise()) : clampUtil(2 + Math.abs(noise()));
      return { util, sglangMb: SGLANG_POOL_MB + Math.round(rng.uniform(0, 40)), trainMb: 1850, power: power(util) };
    }
    const phase = step.ranks[rank].phases.find((p) => t >= p.t0 && t < p.t1)?.name ?? 'train_wait';
    const profile: Record<string, [number, number]> = {
      train_wait: [0, 1850],
      wake_up: [17, 24000],
      data_preprocess: [7, 31500],
      ref_log_probs: [81, 39800],
      log_probs: [84, 40200],
      actor_train: [94, 71300],
      update_weights: [47, 52600],
      sleep: [11, 9000],
    };
    const [u, mem] = profile[phase] ?? [0, 1850];
    const util = clampUtil(u === 0 ? Math.abs(noise()) * 0.4 : u + noise());
    const coords = rankCoords(this.layout, rank);
    // Later pipeline stages hold the logits and the loss: a little more memory.
    const trainMb = mem === 1850 ? mem : mem + coords.pp * 1900 + Math.round(rng.uniform(-300, 300));
    const sglangMb = phase === 'update_weights' || phase === 'sleep' ? 2300 : 1150;
    return { util, sglangMb: Math.min(sglangMb, GPU_MEM_MB - trainMb - 500), trainMb, power: power(util) };
  }

  private writeEngines(w: StepWindow, carry: TelemetryCarry): void {
    const { layout } = this;
    const step = w.step;
    const requests = step ? engineRequests(step, w.start) : [];
    const groups = new Map<string, EngineRequest[]>();
    for (const r of requests) {
      const key = `${r.engine}|${r.dp}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key)!.push(r);
    }
    const rng = SeededRandom.derive(this.plan.config.seed, 'engine', step ? step.step : -1);
    const firstTick = Math.ceil((w.start - 0.412) / 2);
    // Direct-mode scraping starts once the first topology snapshot names the engines.
    const sglangUp = this.plan.config.initSeconds - 12;
    for (let k = firstTick; k * 2 + 0.412 < w.end; k++) {
      const t = round3(k * 2 + 0.412);
      if (t < w.start || t < sglangUp) continue;
      const ts = this.abs(t);
      for (let e = 0; e < layout.engines.length; e++) {
        const addr = step ? addrAt(layout, step, carry, e, t) : engineAddr(layout.engines[e], carry.ports[e]);
        if (addr === null) continue;
        for (let dp = 0; dp < layout.engineDp; dp++) {
          const base = carry.counters.get(`${addr}|${dp}`) ?? zeroCounters();
          const c: EngineCounters = { ...base };
          let running = 0;
          let queue = 0;
          let throughput = 0;
          let usage = 0;
          let later = 0;
          for (const r of groups.get(`${e}|${dp}`) ?? []) {
            // A request on a restarted engine counts only against the addr it ran on.
            if (step?.restart && step.restart.engine === e && (r.t0 < step.restart.failTs) !== (t < step.restart.failTs)) continue;
            if (r.queued <= t && t < r.t0) queue++;
            if (r.t0 <= t && t < r.end) {
              running++;
              if (t >= r.t0 + r.ttft) throughput += r.rate;
              usage += r.context + Math.max(0, (t - r.t0 - r.ttft) * r.rate);
              if (r.laterTurn) later++;
            }
            addRequest(c, r, t);
          }
          const labels = engineLabelsJson({ engine_type: 'unified', dp_rank: String(dp) });
          const hit = running > 0 ? 0.31 + 0.4 * (later / running) + rng.normal(0, 0.02) : 0.0;
          const rows: [string, number][] = [
            ['sglang_num_running_reqs', running],
            ['sglang_num_queue_reqs', queue],
            ['sglang_gen_throughput', round3(throughput * (1 + rng.normal(0, 0.03)))],
            ['sglang_token_usage', Math.round((usage / KV_CAPACITY_TOKENS) * 1e4) / 1e4],
            ['sglang_cache_hit_rate', Math.round(Math.max(0, Math.min(1, hit)) * 1e4) / 1e4],
            ['sglang_prompt_tokens_total', c.prompt],
            ['sglang_generation_tokens_total', c.generation],
            ['sglang_num_requests_total', c.requests],
            ['sglang_num_aborted_requests_total', c.aborted],
            ['sglang_time_to_first_token_seconds_sum', round6(c.ttftSum)],
            ['sglang_time_to_first_token_seconds_count', c.ttftCount],
            ['sglang_inter_token_latency_seconds_sum', round6(c.itlSum)],
            ['sglang_inter_token_latency_seconds_count', c.itlCount],
            ['sglang_time_per_output_token_seconds_sum', round6(c.tpotSum)],
            ['sglang_time_per_output_token_seconds_count', c.tpotCount],
            ['sglang_e2e_request_latency_seconds_sum', round6(c.e2eSum)],
            ['sglang_e2e_request_latency_seconds_count', c.e2eCount],
          ];
          for (const [metric, value] of rows) this.writer.appendPartitioned('engine_series', ts, engineSampleLine(ts, addr, metric, labels, value));
        }
      }
    }
  }

  private writeTrajectories(step: StepPlan, windowStart: number): void {
    const events: TrajectoryEvent[] = [];
    for (const { sample, attempt } of attemptsOf(step, windowStart)) {
      if (sample.evaluation) continue;
      const base = { sample_index: sample.index, group_index: sample.groupIndex };
      const prior = sample.attempts.slice(0, sample.attempts.indexOf(attempt)).flatMap((a) => a.turns.filter((t) => t.genT1 <= a.t1 && (a.status !== 'aborted' || t.genT1 < a.t1)));
      const before = prior.length ? String(prior[prior.length - 1].version) : '';
      events.push({ ts: attempt.t0, kind: 'attempt_start', turn: -1, weight_version: before, detail: '', ...base });
      events.push({ ts: attempt.admitted, kind: 'gen_start', turn: -1, weight_version: before, detail: '', ...base });
      let version = before;
      for (const turn of attempt.turns) {
        const cut = attempt.status === 'aborted' && turn.genT1 >= attempt.t1 - 1e-9;
        if (cut) break;
        version = String(turn.version);
        events.push({ ts: turn.genT0, kind: 'gen_start', turn: turn.turn, weight_version: version, detail: '', ...base });
        events.push({ ts: turn.genT1, kind: 'gen_end', turn: turn.turn, weight_version: version, detail: String(turn.completionTokens), ...base });
        if (turn.tool && turn.tool.t1 <= attempt.t1) {
          events.push({ ts: turn.tool.t0, kind: 'tool_start', turn: turn.turn, weight_version: version, detail: '1 calls', ...base });
          events.push({ ts: turn.tool.t1, kind: 'tool_end', turn: turn.turn, weight_version: version, detail: '1 calls', ...base });
        }
      }
      events.push({ ts: attempt.t1, kind: 'attempt_end', turn: -1, weight_version: version, detail: attempt.status, ...base });
    }
    // Sinks push in batches; on disk the events of a window are in time order (ties keep emit order).
    const order = events.map((e, i) => ({ e, i })).sort((a, b) => a.e.ts - b.e.ts || a.i - b.i);
    for (const { e } of order) {
      const ts = this.abs(e.ts);
      this.writer.appendPartitioned('trajectories', ts, trajectoryLine({ ...e, ts }));
    }
  }

  private writeMetrics(step: StepPlan): void {
    const { config } = this.plan;
    const rng = SeededRandom.derive(config.seed, 'metrics', step.step);
    const s = step.samples;
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
    const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
    const groups = new Map<number, number[]>();
    for (const x of s) groups.set(x.groupIndex, [...(groups.get(x.groupIndex) ?? []), x.reward]);
    const zeroStd = [...groups.values()].filter((g) => g.every((v) => v === g[0])).length / groups.size;
    const lens = s.map((x) => x.responseLength);
    const rewardsMean = mean(s.map((x) => x.reward));
    if (step.evalWindow) {
      const ev = step.evalSamples;
      this.writer.appendSingle(
        'metrics',
        metricsLine(this.abs(step.evalWindow[1] + 0.4), 'eval/step', step.step, {
          'eval/math_word_problems': r6(mean(ev.map((x) => x.reward))),
          'eval/math_word_problems-response_len/mean': r6(mean(ev.map((x) => x.responseLength))),
          'eval/math_word_problems-truncated_ratio': r6(mean(ev.map((x) => (x.status === 'truncated' ? 1 : 0)))),
          'eval/step': step.step,
        }),
      );
    }
    this.writer.appendSingle(
      'metrics',
      metricsLine(this.abs(step.rolloutEnd + 0.3), 'rollout/step', step.step, {
        'rollout/rewards_mean': r6(rewardsMean),
        'rollout/raw_reward': r6(rewardsMean),
        'rollout/response_len/mean': r6(mean(lens)),
        'rollout/response_len/max': Math.max(...lens),
        'rollout/truncated_ratio': r6(mean(s.map((x) => (x.status === 'truncated' ? 1 : 0)))),
        'rollout/zero_std_group_ratio': r6(zeroStd),
        'rollout/tool_calls_mean': r6(mean(s.map((x) => x.conversation.toolCalls))),
        'rollout/aborted_samples': s.filter((x) => x.attempts.length > 1).length,
        'rollout/step': step.step,
      }, new Set(['rollout/response_len/max', 'rollout/aborted_samples'])),
    );
    const last = step.ranks[0].phases;
    const phase = (name: string) => last.find((p) => p.name === name)!;
    const actor = phase('actor_train');
    const tokens = s.reduce((a, x) => a + x.tokens.length, 0);
    const world = this.world;
    const divergent = s.filter((x) => x.divergent).length / s.length;
    this.writer.appendSingle(
      'metrics',
      metricsLine(this.abs(actor.t1 + 0.2), 'train/step', step.step, {
        'train/loss': r6(lossAt(step.step, rng.normal(0, 0.02))),
        'train/pg_loss': r6(rng.normal(0, 0.03)),
        'train/entropy_loss': r6(entropyLossAt(step.step, rng.normal(0, 0.01))),
        'train/pg_clipfrac': r6(0.0021 + 0.0009 * rng.next() + 0.02 * divergent),
        'train/ppo_kl': r6(Math.abs(rng.normal(0.0004, 0.0002)) + 0.01 * divergent),
        'train/train_rollout_logprob_abs_diff': r6(0.0061 + 0.002 * rng.next() + 0.19 * divergent),
        'train/grad_norm': r6(0.21 + 0.05 * rng.next() + 0.6 * divergent),
        'train/lr-pg': 1e-6,
        'train/step': step.step,
      }),
    );
    const stepTime = step.trainEnd - step.start;
    const rolloutTime = step.rolloutEnd - step.rolloutStart;
    const actorTime = actor.t1 - actor.t0;
    // The demo's sequences are short stand-ins; MFU is reported for the run it stands in for.
    const mfu = 0.352 + 0.012 * rng.next() - 0.004 * Math.max(0, actorTime - 60) / 10;
    const tflops = mfu * 989;
    this.writer.appendSingle(
      'metrics',
      metricsLine(this.abs(step.trainEnd + 0.3), 'rollout/step', step.step, {
        'perf/step_time': r6(stepTime),
        'perf/rollout_time': r6(rolloutTime),
        'perf/train_time': r6(step.trainEnd - step.rolloutEnd),
        'perf/actor_train_time': r6(actorTime),
        'perf/log_probs_time': r6(phase('log_probs').t1 - phase('log_probs').t0),
        'perf/ref_log_probs_time': r6(phase('ref_log_probs').t1 - phase('ref_log_probs').t0),
        'perf/update_weights_time': r6(phase('update_weights').t1 - phase('update_weights').t0),
        'perf/wait_time_ratio': r6(rolloutTime / stepTime),
        'perf/actor_train_tflops': r6(tflops),
        'perf/actor_train_mfu': r6(mfu),
        'perf/mfu_peak_tflops': 989.0,
        'perf/tokens_per_gpu_per_sec': r6((tokens * 16) / stepTime / world),
        'rollout/step': step.step,
      }),
    );
  }
}

function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

function hex(node: string, gpu: number, salt: number): string {
  let h = 0x811c9dc5;
  for (const ch of `${node}/${gpu}/${salt}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  const a = h.toString(16).padStart(8, '0');
  return `${a}-${a.slice(0, 4)}-${a.slice(4)}-${(h ^ 0x5bd1e995).toString(16).padStart(8, '0').slice(0, 4)}-${(h * 7919).toString(16).slice(-12).padStart(12, '0')}`;
}
