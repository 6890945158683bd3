// `rlsight demo`: generates a complete, recent-looking run directory in the real on-disk formats,
// and can append the next step to it later, as a live run would.
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { worldSize } from './clusterLayout.ts';
import { type DemoConfig, type RunPlan, demoConfig, planRun } from './demoPlan.ts';
import { writeStepDumps } from './demoDumps.ts';
import { DemoTelemetry, initialCarry } from './demoTelemetry.ts';
import { type PyJson } from '../formats/pythonJson.ts';
import { metaJson } from '../formats/dashboard/encode.ts';
import { DASHBOARD_DIR, META_FILE } from '../formats/dashboard/layout.ts';
import { historyMetricsLines } from './metricHistory.ts';
import { TelemetryWriter } from './telemetryWriter.ts';
import { ROLLOUT_DIR, rolloutNameOf, TOKENIZER_DIR, TOKENIZER_FILE } from '../formats/miles/layout.ts';

export interface DemoRunOptions {
  /** 128 GPUs (16 nodes) instead of 16, so the fleet overview (> 64 lanes) is exercised. */
  large?: boolean;
  seed?: number;
  /** Number of detailed train steps, with dumps and telemetry (default 6). */
  steps?: number;
  /**
   * Metrics-only steps before the detailed ones (default 0): the detailed steps then carry rollout
   * ids from this number on, and the run's metrics span `historySteps + steps` steps.
   */
  historySteps?: number;
  /** The same recipe with a collapsing outcome (the zero-std group share climbs step after step). */
  collapse?: boolean;
  /** Wall-clock "now" in epoch seconds; the run ends a minute before it. */
  now?: number;
  /** Called with one line of progress at a time. */
  onProgress?: (message: string) => void;
}

export interface DemoRunInfo {
  runDir: string;
  seed: number;
  large: boolean;
  gpus: number;
  steps: number;
  rolloutIds: { train: number[]; eval: number[] };
  /** Epoch seconds of `meta.start_ts` and of the newest record. */
  startTs: number;
  endTs: number;
  files: number;
  bytes: number;
}

const RUN_ID_PREFIX = 'rlsight-demo-seed-';

function metaArgs(config: DemoConfig): Record<string, PyJson> {
  const { layout } = config;
  return {
    wandb_group: config.runName,
    wandb_project: 'agentic-math-rl',
    wandb_run_id: `${RUN_ID_PREFIX}${config.seed}`,
    colocate: true,
    num_gpus_per_node: layout.gpusPerNode,
    actor_num_nodes: layout.nodes.length,
    actor_num_gpus_per_node: layout.gpusPerNode,
    rollout_num_gpus: worldSize(layout),
    rollout_num_gpus_per_engine: layout.engineTp,
    rollout_batch_size: config.promptsPerStep,
    n_samples_per_prompt: config.samplesPerPrompt,
    rollout_max_response_len: config.maxResponseLen,
    hf_checkpoint: config.large ? 'Qwen/Qwen3-32B' : 'Qwen/Qwen3-8B',
    lr: 1e-6,
    global_batch_size: config.promptsPerStep * config.samplesPerPrompt,
    tensor_model_parallel_size: layout.engineTp,
    pipeline_model_parallel_size: 1,
    sglang_max_running_requests: 64,
    sglang_mem_fraction_static: 0.8,
    use_miles_router: false,
    router_dp_aware: false,
  };
}

function writeLaneCatalog(dashboard: string, text: string): void {
  const path = join(dashboard, 'lane_catalog.json');
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return;
  writeFileSync(path + '.tmp', text);
  renameSync(path + '.tmp', path);
}

function walk(dir: string, visit: (path: string) => void): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, visit);
    visit(p);
  }
}

/** Generates a demo run into `outDir` (created if missing; must not already hold a run). */
export async function generateDemoRun(outDir: string, opts: DemoRunOptions = {}): Promise<DemoRunInfo> {
  const progress = opts.onProgress ?? (() => {});
  const config = demoConfig({ large: opts.large, seed: opts.seed, steps: opts.steps, firstStep: opts.historySteps ?? 0, collapse: opts.collapse });
  if (existsSync(join(outDir, DASHBOARD_DIR, META_FILE)) || existsSync(join(outDir, ROLLOUT_DIR))) {
    throw new Error(`demo output ${outDir} already holds a run; choose an empty folder`);
  }
  const plan = planRun(config);
  const last = plan.steps[plan.steps.length - 1];
  const runSeconds = last.trainEnd + 0.6;
  const now = opts.now ?? Date.now() / 1000;
  const startTs = Math.round((now - 60 - runSeconds) * 1000) / 1000;

  const dashboard = join(outDir, 'dashboard');
  mkdirSync(dashboard, { recursive: true });
  writeFileSync(join(dashboard, 'meta.json'), metaJson(config.runName, startTs, metaArgs(config)));
  writeTokenizer(outDir, plan);

  const writer = new TelemetryWriter(dashboard);
  // The steps before this attempt: metrics only, ending where the detailed steps begin.
  for (const line of historyMetricsLines(config.seed, config.firstStep, startTs, worldSize(config.layout))) writer.appendSingle('metrics', line);
  const telemetry = new DemoTelemetry(plan, startTs, writer);
  const carry = initialCarry(config.layout);
  telemetry.writeInitialization(carry);
  const dumpTimes = new Map<string, number>();
  for (const step of plan.steps) {
    telemetry.writeStep(step.index, carry);
    const paths = await writeStepDumps(outDir, plan, step);
    // Give each dump the mtime training would have given it.
    dumpTimes.set(paths.rollout, startTs + step.rolloutEnd + 1);
    if (paths.evalRollout && step.evalWindow) dumpTimes.set(paths.evalRollout, startTs + step.evalWindow[1] + 0.5);
    for (const p of paths.train) dumpTimes.set(p, startTs + step.trainEnd - 0.5);
    progress(`step ${step.index + 1}/${plan.steps.length} written`);
  }
  writer.close();
  writeLaneCatalog(dashboard, telemetry.laneCatalog());

  // Every file gets a plausible mtime at or before the end of the run, which is a minute ago, so
  // the reader's freshness rules see a finished run.
  const endTs = startTs + runSeconds;
  let files = 0;
  let bytes = 0;
  walk(outDir, (p) => {
    const st = statSync(p);
    if (!st.isDirectory()) {
      files++;
      bytes += st.size;
    }
    const t = dumpTimes.get(p) ?? endTs;
    utimesSync(p, t, t);
  });
  utimesSync(outDir, endTs, endTs);
  return {
    runDir: outDir,
    seed: config.seed,
    large: config.large,
    gpus: worldSize(config.layout),
    steps: plan.steps.length,
    rolloutIds: { train: plan.steps.map((s) => s.step), eval: plan.steps.filter((s) => s.evalSamples.length).map((s) => s.step) },
    startTs,
    endTs: Math.round(endTs * 1000) / 1000,
    files,
    bytes,
  };
}

function writeTokenizer(outDir: string, plan: RunPlan): void {
  const dir = join(outDir, TOKENIZER_DIR);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(outDir, TOKENIZER_FILE), JSON.stringify(plan.tokenizer.tokenizerJson(), null, 2));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(plan.tokenizer.tokenizerConfig(), null, 2));
}

export interface AppendedStep {
  step: number;
  /** Epoch seconds the appended step covers. */
  t0: number;
  t1: number;
  rows: number;
}

/**
 * Appends the next step of a demo run made by `generateDemoRun`: its telemetry (including the
 * closing of the open `train_wait` markers) and then its dumps, train companion last. The step
 * continues the run's clock, so right after generation it runs about a minute into the future.
 */
export async function appendDemoStep(runDir: string): Promise<AppendedStep> {
  const metaPath = join(runDir, 'dashboard', 'meta.json');
  let meta: { start_ts: number; args: Record<string, unknown> };
  try {
    meta = JSON.parse(readFileSync(metaPath, 'utf8'));
  } catch (e) {
    throw new Error(`${runDir} is not a demo run: cannot read dashboard/meta.json (${(e as Error).message})`);
  }
  const runId = String(meta.args?.wandb_run_id ?? '');
  if (!runId.startsWith(RUN_ID_PREFIX)) throw new Error(`${runDir} was not made by the demo generator (wandb_run_id ${JSON.stringify(runId)})`);
  const seed = Number(runId.slice(RUN_ID_PREFIX.length));
  const large = meta.args.actor_num_nodes === 16;
  const ids = readdirSync(join(runDir, ROLLOUT_DIR)).flatMap((f) => {
    const step = rolloutNameOf(f);
    return step !== null && step !== 'not a step' && !step.evaluation ? [step.id] : [];
  });
  // The detailed steps start at the smallest dumped id (the metrics-only history lies before it).
  const firstStep = ids.length ? Math.min(...ids) : 0;
  const nextId = ids.length ? Math.max(...ids) + 1 : 0;
  const next = nextId - firstStep;
  const config = demoConfig({ large, seed, steps: next + 1, firstStep });
  const plan = planRun(config);
  const writer = new TelemetryWriter(join(runDir, 'dashboard'));
  const telemetry = new DemoTelemetry(plan, meta.start_ts, writer);
  const carry = initialCarry(config.layout);
  for (let s = 0; s < next; s++) telemetry.advanceCarry(s, carry);
  telemetry.writeStep(next, carry);
  writer.close();
  writeLaneCatalog(join(runDir, 'dashboard'), telemetry.laneCatalog());
  await writeStepDumps(runDir, plan, plan.steps[next]);
  const w = telemetry.window(next);
  return { step: nextId, t0: meta.start_ts + w.start, t1: meta.start_ts + w.end, rows: writer.rows };
}
