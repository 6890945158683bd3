// The story of a demo run, decided before anything is written: which samples each step
// generates, when every turn runs on which engine, and when every rank trains. Everything
// is a pure function of the config and seed, so a later step can be re-planned exactly.
import { type ClusterLayout, planCluster, rankPlacement, worldSize } from './clusterLayout.ts';
import { type Conversation, makeConversation, makeProblem } from './conversations.ts';
import { SeededRandom } from './random.ts';
import { type DemoTokenizer, demoTokenizer } from './vocabulary.ts';

export interface DemoConfig {
  seed: number;
  large: boolean;
  steps: number;
  /**
   * The rollout id of the first detailed step: the steps before it have metrics only (an earlier
   * stretch of the run, before this attempt wrote dumps and telemetry). The story is told from here.
   */
  firstStep: number;
  layout: ClusterLayout;
  promptsPerStep: number;
  samplesPerPrompt: number;
  evalPrompts: number;
  maxResponseLen: number;
  evalSteps: number[];
  /** The step whose rollout loses an engine, which comes back on a new port. */
  restart: { step: number; engine: number };
  /** The step where train and rollout log-probs part ways after the first tool response. */
  divergenceStep: number;
  stragglerRank: number;
  /** The engine whose router sends most requests to dp rank 0. */
  imbalancedEngine: number;
  runName: string;
  initSeconds: number;
  /** The run collapses: ever more groups are solved by every sample, so the zero-std share climbs. */
  collapse: boolean;
}

export function demoConfig(opts: { large?: boolean; seed?: number; steps?: number; firstStep?: number; collapse?: boolean } = {}): DemoConfig {
  const large = opts.large ?? false;
  const seed = opts.seed ?? 0;
  const layout = large
    ? planCluster(16, 8, 8, { tp: 4, pp: 2, cp: 2 })
    : planCluster(2, 8, 4, { tp: 2, pp: 2, cp: 2 });
  return {
    seed,
    large,
    steps: opts.steps ?? 6,
    firstStep: opts.firstStep ?? 0,
    layout,
    promptsPerStep: large ? 32 : 16,
    samplesPerPrompt: 8,
    evalPrompts: large ? 32 : 24,
    maxResponseLen: 1024,
    evalSteps: [0, 4],
    restart: { step: 2, engine: 1 },
    divergenceStep: 3,
    stragglerRank: large ? 77 : 11,
    imbalancedEngine: 0,
    runName: `${large ? 'qwen3-32b-grpo-agentic-128gpu' : 'qwen3-8b-grpo-agentic'}${opts.collapse ? '-collapse' : ''}`,
    initSeconds: 95,
    collapse: opts.collapse ?? false,
  };
}

export type SampleStatus = 'completed' | 'truncated' | 'aborted';

/** One generation turn of a sample, with the tool call that followed it (if any). */
export interface TurnTiming {
  turn: number;
  genT0: number;
  genT1: number;
  completionTokens: number;
  /** Time to first token, the prefill part of the turn. */
  ttft: number;
  /** Tokens already in context when the turn starts (prompt + earlier turns). */
  context: number;
  rate: number;
  version: number;
  tool: { t0: number; t1: number } | null;
}

export interface Attempt {
  t0: number;
  /** Time the semaphore was acquired (the coarse `gen_start`). */
  admitted: number;
  t1: number;
  engine: number;
  status: SampleStatus;
  turns: TurnTiming[];
}

export interface PlannedSample {
  index: number;
  groupIndex: number;
  conversation: Conversation;
  tokens: number[];
  promptLength: number;
  responseLength: number;
  /** 1 for generated tokens, 0 for tool output inside the response. */
  lossMask: number[];
  /** Response-relative offset where each generated turn starts. */
  turnStarts: number[];
  status: 'completed' | 'truncated';
  reward: number;
  weightVersions: string[];
  /** Every attempt, across steps for a sample carried over by partial rollout. */
  attempts: Attempt[];
  /** Train log-probs drift away from the rollout's after the first tool response. */
  divergent: boolean;
  dpRank: number;
  evaluation: boolean;
}

export interface RankTrainPhases {
  rank: number;
  node: string;
  gpu: number;
  /** Closed intervals in order; `train_wait` first (it opened when the previous step finished). */
  phases: { name: string; t0: number; t1: number }[];
}

export interface EngineRestart {
  engine: number;
  failTs: number;
  upTs: number;
  oldPort: number;
  newPort: number;
}

export interface StepPlan {
  /** The rollout id (`firstStep + index`). */
  step: number;
  /** Position among the detailed steps; the story (eval, restart, divergence) is told by index. */
  index: number;
  start: number;
  evalWindow: [number, number] | null;
  evalSamples: PlannedSample[];
  rolloutStart: number;
  rolloutEnd: number;
  /** The dumped batch, in batch order (a carried group first). */
  samples: PlannedSample[];
  /** The over-sampled group aborted at the end of this rollout and finished next step. */
  carriedOut: PlannedSample[];
  restart: EngineRestart | null;
  ranks: RankTrainPhases[];
  /** When the last rank finished the step (its `train_wait` opens again). */
  trainEnd: number;
  /** Engine ports in effect after this step (a restarted engine keeps its new port). */
  enginePorts: number[];
  dataBufferLength: number;
}

export interface RunPlan {
  config: DemoConfig;
  tokenizer: DemoTokenizer;
  /** Seconds from `meta.start_ts`; add the run's start to get wall time. */
  steps: StepPlan[];
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Decode speed of one request under a full batch, tokens per second. */
const DECODE_RATE: [number, number] = [7, 12];

/** A sample as drafted, before its attempts are timed: the planned sample's own fields and its pacing. */
interface Draft extends Pick<PlannedSample, 'index' | 'groupIndex' | 'conversation' | 'tokens' | 'promptLength' | 'responseLength' | 'lossMask' | 'turnStarts' | 'status' | 'reward'> {
  turnTokens: number[];
  rate: number;
  toolSeconds: number[];
}

function draftSample(config: DemoConfig, tokenizer: DemoTokenizer, rng: SeededRandom, index: number, groupIndex: number, conv: Conversation): Draft {
  const promptIds = tokenizer.encode(conv.segments[0].text);
  const response: number[] = [];
  const mask: number[] = [];
  const turnStarts: number[] = [];
  const turnTokens: number[] = [];
  let truncated = false;
  for (const seg of conv.segments.slice(1)) {
    if (truncated) break;
    const ids = tokenizer.encode(seg.text);
    const room = config.maxResponseLen - response.length;
    const take = ids.slice(0, Math.max(0, room));
    if (take.length === 0) {
      truncated = true;
      break;
    }
    if (seg.kind === 'model') {
      turnStarts.push(response.length);
      turnTokens.push(take.length);
    }
    response.push(...take);
    for (let i = 0; i < take.length; i++) mask.push(seg.kind === 'model' ? 1 : 0);
    if (take.length < ids.length) truncated = true;
  }
  const correct = !truncated && conv.finalAnswer !== null && Math.abs(conv.finalAnswer - conv.problem.answer) < 1e-9;
  return {
    index,
    groupIndex,
    conversation: conv,
    tokens: [...promptIds, ...response],
    promptLength: promptIds.length,
    responseLength: response.length,
    lossMask: mask,
    turnStarts,
    turnTokens,
    status: truncated ? 'truncated' : 'completed',
    reward: correct ? 1.0 : 0.0,
    rate: rng.uniform(...DECODE_RATE),
    toolSeconds: turnTokens.map(() => round3(rng.uniform(0.6, 4.5))),
  };
}

/** A GRPO group: one problem, `n` attempts at it, sharing a difficulty. */
function draftGroup(config: DemoConfig, tokenizer: DemoTokenizer, step: number, groupIndex: number, firstIndex: number, n: number, opts: { forceTools?: boolean; evaluation?: boolean } = {}): Draft[] {
  const rng = SeededRandom.derive(config.seed, opts.evaluation ? 'eval-group' : 'group', step, groupIndex);
  // Difficulty spread so some groups are trivially solved and some never: zero reward variance.
  const kind = rng.next();
  const progress = Math.min(1, step / 8);
  // A collapsing run solves ever more groups outright (the same draw decides, so the runs differ only there).
  const solved = 0.16 + (config.collapse ? 0.7 * progress : 0);
  const pCorrect = kind < solved ? 0.99 : kind < solved + 0.1 ? 0.01 : Math.min(0.8, 0.25 + 0.25 * progress + rng.uniform(0, 0.35));
  const problem = makeProblem(rng, rng.next());
  const out: Draft[] = [];
  for (let i = 0; i < n; i++) {
    const srng = SeededRandom.derive(config.seed, opts.evaluation ? 'eval-sample' : 'sample', firstIndex + i);
    const rambling = !opts.evaluation && srng.chance(0.045);
    const toolCalls = opts.forceTools ? srng.int(1, 2) : srng.pick([0, 1, 1, 1, 2, 2, 3]);
    const conv = makeConversation(srng, problem, { pCorrect, rambling, toolCalls });
    out.push(draftSample(config, tokenizer, srng, firstIndex + i, groupIndex, conv));
  }
  return out;
}

/** Lays the turns of a sample out in time from `t0` on `engine` under weight version `version`. */
function runTurns(d: Draft, t0: number, version: number, fromTurn = 0): TurnTiming[] {
  const turns: TurnTiming[] = [];
  let t = t0;
  for (let k = fromTurn; k < d.turnTokens.length; k++) {
    const ttft = 0.08 + 0.002 * (d.turnStarts[k] + d.promptLength) / 10;
    const genT1 = round3(t + ttft + d.turnTokens[k] / d.rate);
    const last = k === d.turnTokens.length - 1;
    const tool = last ? null : { t0: genT1, t1: round3(genT1 + d.toolSeconds[k]) };
    const context = d.promptLength + d.turnStarts[k];
    turns.push({ turn: k + 1, genT0: round3(t), genT1, completionTokens: d.turnTokens[k], ttft, context, rate: d.rate, version, tool });
    t = tool ? tool.t1 + 0.04 : genT1;
  }
  return turns;
}

function finish(d: Draft, attempts: Attempt[], resumeFrom: number, divergent: boolean, dpRank: number, evaluation: boolean): PlannedSample {
  // One version per generated turn: turns before `resumeFrom` were generated in the carried-over attempt.
  const versions: string[] = [];
  const first = attempts[0];
  const last = attempts[attempts.length - 1];
  for (const t of first.turns) if (t.turn <= resumeFrom) versions[t.turn - 1] = String(t.version);
  for (const t of last.turns) if (t.turn > resumeFrom) versions[t.turn - 1] = String(t.version);
  return {
    index: d.index,
    groupIndex: d.groupIndex,
    conversation: d.conversation,
    tokens: d.tokens,
    promptLength: d.promptLength,
    responseLength: d.responseLength,
    lossMask: d.lossMask,
    turnStarts: d.turnStarts,
    status: d.status,
    reward: d.reward,
    weightVersions: versions.filter((v) => v !== undefined),
    attempts,
    divergent,
    dpRank,
    evaluation,
  };
}

interface ChainState {
  t: number;
  nextIndex: number;
  nextGroup: number;
  carried: { drafts: Draft[]; attempts: Attempt[][]; resumeFrom: number[] } | null;
  enginePorts: number[];
}

function planStep(config: DemoConfig, tokenizer: DemoTokenizer, step: number, state: ChainState): StepPlan {
  const { layout } = config;
  const rng = SeededRandom.derive(config.seed, 'step', step);
  const engines = layout.engines.length;
  const start = round3(state.t);
  let t = start;

  // Eval rollout first at eval steps (no trajectory events; engines busy for ~45 s).
  let evalWindow: [number, number] | null = null;
  const evalSamples: PlannedSample[] = [];
  if (config.evalSteps.includes(step)) {
    const e0 = round3(t + 0.4);
    let e1 = e0;
    for (let p = 0; p < config.evalPrompts; p++) {
      const [d] = draftGroup(config, tokenizer, step, p, p, 1, { evaluation: true });
      const engine = p % engines;
      const a0 = round3(e0 + rng.uniform(0.05, 1.5));
      const turns = runTurns(d, a0 + 0.02, config.firstStep + step);
      const a1 = turns[turns.length - 1].genT1;
      e1 = Math.max(e1, a1);
      evalSamples.push(finish(d, [{ t0: a0, admitted: round3(a0 + 0.02), t1: a1, engine, status: d.status, turns }], 0, false, p % layout.engineDp, true));
    }
    evalWindow = [e0, round3(e1 + 0.6)];
    t = evalWindow[1] + 0.3;
  }

  const rolloutStart = round3(t + 0.2);
  const version = config.firstStep + step;
  const drafts: { d: Draft; carriedAttempts: Attempt[] | null; resumeFrom: number }[] = [];
  if (state.carried) {
    const c = state.carried;
    c.drafts.forEach((d, i) => drafts.push({ d, carriedAttempts: c.attempts[i], resumeFrom: c.resumeFrom[i] }));
  }
  const freshGroups = config.promptsPerStep - (state.carried ? 1 : 0);
  for (let g = 0; g < freshGroups; g++) {
    for (const d of draftGroup(config, tokenizer, step, state.nextGroup, state.nextIndex, config.samplesPerPrompt)) drafts.push({ d, carriedAttempts: null, resumeFrom: 0 });
    state.nextGroup++;
    state.nextIndex += config.samplesPerPrompt;
  }
  const extra = draftGroup(config, tokenizer, step, state.nextGroup, state.nextIndex, config.samplesPerPrompt, { forceTools: true });
  state.nextGroup++;
  state.nextIndex += config.samplesPerPrompt;

  const restart: EngineRestart | null =
    step === config.restart.step
      ? {
          engine: config.restart.engine,
          failTs: round3(rolloutStart + 38 + rng.uniform(0, 6)),
          upTs: 0,
          oldPort: state.enginePorts[config.restart.engine],
          newPort: state.enginePorts[config.restart.engine] + 2,
        }
      : null;
  if (restart) restart.upTs = round3(restart.failTs + 27 + rng.uniform(0, 5));

  const samples: PlannedSample[] = [];
  for (const [slot, { d, carriedAttempts, resumeFrom }] of drafts.entries()) {
    let engine = slot % engines;
    const queued = round3(rolloutStart + 0.01 * (slot % 50));
    const admitted = round3(queued + rng.uniform(0.05, 1.8));
    const attempts: Attempt[] = carriedAttempts ? [...carriedAttempts] : [];
    // A carried sample keeps its finished turns and regenerates the rest under the new weights.
    let turns = runTurns(d, admitted + 0.02, version, resumeFrom);
    let end = turns[turns.length - 1].genT1;
    if (restart && engine === restart.engine && end > restart.failTs) {
      const cut = turns.filter((x) => x.genT0 < restart.failTs);
      attempts.push({ t0: queued, admitted, t1: restart.failTs, engine, status: 'aborted', turns: cut });
      engine = (engine + 1 + (slot % (engines - 1))) % engines;
      if (engine === restart.engine) engine = (engine + 1) % engines;
      const retry = round3(restart.failTs + rng.uniform(0.5, 3));
      turns = runTurns(d, retry + 0.02, version, resumeFrom);
      end = turns[turns.length - 1].genT1;
      attempts.push({ t0: retry, admitted: round3(retry + 0.02), t1: end, engine, status: d.status, turns });
    } else {
      attempts.push({ t0: queued, admitted, t1: end, engine, status: d.status, turns });
    }
    const toolUser = d.turnTokens.length > 1;
    const divergent = step === config.divergenceStep && toolUser && rng.chance(0.45);
    const dp = engine === config.imbalancedEngine ? (rng.chance(0.85) ? 0 : 1) : Math.floor(slot / engines) % config.layout.engineDp;
    samples.push(finish(d, attempts, resumeFrom, divergent, dp, false));
  }
  const rolloutEnd = round3(Math.max(...samples.map((s) => s.attempts[s.attempts.length - 1].t1)) + 0.35);

  // The over-sampled group: first turn done, second turn cut when the batch is full.
  const carriedAttempts: Attempt[][] = [];
  const resumeFrom: number[] = [];
  for (const [i, d] of extra.entries()) {
    let engine = (drafts.length + i) % engines;
    if (restart && engine === restart.engine) engine = (engine + 1) % engines;
    const queued = round3(rolloutStart + 0.3 + 0.01 * i);
    const admitted = round3(queued + rng.uniform(0.5, 3));
    const all = runTurns(d, admitted + 0.02, version);
    resumeFrom.push(Math.min(all.filter((x) => x.genT1 < rolloutEnd).length, all.length - 1));
    const turns = all.filter((x) => x.genT0 < rolloutEnd - 0.5).map((x) => (x.genT1 > rolloutEnd ? { ...x, genT1: rolloutEnd, tool: null } : x));
    for (const x of turns) if (x.tool && x.tool.t1 > rolloutEnd) x.tool = { t0: x.tool.t0, t1: rolloutEnd };
    carriedAttempts.push([{ t0: queued, admitted, t1: rolloutEnd, engine, status: 'aborted', turns }]);
  }
  const carriedOut = extra.map((d, i) => finish(d, carriedAttempts[i], resumeFrom[i], false, i % config.layout.engineDp, false));

  const ranks = planTraining(config, step, samples, rolloutEnd);
  const trainEnd = Math.max(...ranks.map((r) => r.phases[r.phases.length - 1].t1));
  const enginePorts = [...state.enginePorts];
  if (restart) enginePorts[restart.engine] = restart.newPort;

  state.t = round3(trainEnd + 0.6);
  state.carried = { drafts: extra, attempts: carriedAttempts, resumeFrom };
  state.enginePorts = enginePorts;
  return {
    step: config.firstStep + step,
    index: step,
    start,
    evalWindow,
    evalSamples,
    rolloutStart,
    rolloutEnd,
    samples,
    carriedOut,
    restart,
    ranks,
    trainEnd,
    enginePorts,
    dataBufferLength: drafts.length - freshGroups * config.samplesPerPrompt,
  };
}

/** Per-rank train phases after the rollout: one rank is late out of `train_wait` every step. */
function planTraining(config: DemoConfig, step: number, samples: PlannedSample[], rolloutEnd: number): RankTrainPhases[] {
  const { layout } = config;
  const rng = SeededRandom.derive(config.seed, 'train', step);
  // Training time grows with the batch's tokens (per GPU: the large fleet spreads more of them).
  const tokens = samples.reduce((a, s) => a + s.tokens.length, 0);
  const work = tokens / (config.large ? 5200 : 1500);
  const world = worldSize(layout);
  const waitEnds: number[] = [];
  for (let r = 0; r < world; r++) {
    const late = r === config.stragglerRank ? 11 + rng.uniform(0, 6) : 0;
    waitEnds.push(round3(rolloutEnd + 0.25 + rng.uniform(0, 0.4) + late));
  }
  const syncStart = Math.max(...waitEnds) + 4.6;
  const refEnd = round3(syncStart + 6 + work * 0.12);
  const lpEnd = round3(refEnd + 5 + work * 0.12);
  const trainDone = round3(lpEnd + 30 + work * 0.55 + rng.uniform(0, 4));
  const updEnd = round3(trainDone + 7.5 + rng.uniform(0, 1.5));
  const out: RankTrainPhases[] = [];
  for (let r = 0; r < world; r++) {
    const { node, gpu } = rankPlacement(layout, r);
    const j = () => rng.uniform(0, 0.25);
    const w1 = waitEnds[r];
    const wake = round3(w1 + 2.6 + j());
    const prep = round3(wake + 1.2 + j());
    const actor = round3(trainDone + j());
    const upd = round3(Math.max(actor, updEnd) + j());
    const sleep = round3(upd + 1.4 + j());
    out.push({
      rank: r,
      node,
      gpu,
      phases: [
        // Its start is the rank's previous step end, filled in by planRun.
        { name: 'train_wait', t0: 0, t1: w1 },
        { name: 'wake_up', t0: w1, t1: wake },
        { name: 'data_preprocess', t0: wake, t1: prep },
        { name: 'ref_log_probs', t0: prep, t1: round3(refEnd + j()) },
        { name: 'log_probs', t0: round3(refEnd + j()), t1: round3(lpEnd + j()) },
        { name: 'actor_train', t0: round3(lpEnd + j()), t1: actor },
        { name: 'update_weights', t0: actor, t1: upd },
        { name: 'sleep', t0: upd, t1: sleep },
      ],
    });
  }
  return out;
}

/** Plans detailed steps 0..steps-1 by index, ids from `firstStep` (seconds relative to the run start). */
export function planRun(config: DemoConfig, steps = config.steps): RunPlan {
  const tokenizer = demoTokenizer();
  const state: ChainState = {
    t: config.initSeconds,
    nextIndex: 0,
    nextGroup: 0,
    carried: null,
    enginePorts: config.layout.engines.map((e) => e.port),
  };
  const plans: StepPlan[] = [];
  let prevRankEnds: number[] | null = null;
  for (let s = 0; s < steps; s++) {
    const plan = planStep(config, tokenizer, s, state);
    // Each rank's train_wait opened when that rank finished its previous step (or at the end of initialization).
    for (const r of plan.ranks) r.phases[0].t0 = prevRankEnds ? prevRankEnds[r.rank] : round3(config.initSeconds - 2 + (r.rank % 8) * 0.05);
    prevRankEnds = plan.ranks.map((r) => r.phases[r.phases.length - 1].t1);
    plans.push(plan);
  }
  return { config, tokenizer, steps: plans };
}

/**
 * A long GRPO group for benchmark dumps: one rambling conversation per group, each sample cut at
 * its own response length (so every token still decodes to real text).
 */
export function longSampleGroup(config: DemoConfig, tokenizer: DemoTokenizer, step: number, groupIndex: number, firstIndex: number, n: number, responseLengths: number[]): PlannedSample[] {
  const rng = SeededRandom.derive(config.seed, 'long-group', step, groupIndex);
  const pCorrect = rng.uniform(0.05, 0.95);
  const conv = makeConversation(rng, makeProblem(rng, rng.next()), { pCorrect, rambling: true, toolCalls: rng.int(1, 2) });
  const out: PlannedSample[] = [];
  for (let i = 0; i < n; i++) {
    const d = draftSample({ ...config, maxResponseLen: responseLengths[i] }, tokenizer, rng, firstIndex + i, groupIndex, conv);
    d.reward = rng.chance(pCorrect) ? 1.0 : 0.0;
    const turns = runTurns(d, 1 + rng.uniform(0, 2), step);
    const attempt: Attempt = { t0: 0, admitted: 1, t1: turns[turns.length - 1].genT1, engine: 0, status: d.status, turns };
    out.push(finish(d, [attempt], 0, false, 0, false));
  }
  return out;
}
