// The slime format: debug rollout dumps (`--dump-details DIR` → `DIR/rollout_data/{id}.pt`, or the files a
// `--save-debug-rollout-data` template wrote) opened as a RunModel. slime writes no telemetry streams, no
// parquet mirror and no trajectory sidecar: the records come from the samples themselves.
import { resolve } from 'node:path';
import { isInside } from '../../formats/fileAccess.ts';
import { NumpyScalar } from '../../formats/torch/value.ts';
import { RefusedOption, NotFound } from '../errors.ts';
import { digestTrainRow } from '../miles/trainDigest.ts';
import type { TrainRow } from '../miles/trainDump.ts';
import type { ConversationRecord, TrainDigest, OpenRunOptions, TraceSource, RolloutIds, RunAdapter, RunModel, SampleRecord, SampleTextRecord, SampleTokenRecord, StepRecords } from '../model.ts';
import { foreground, QUIET_MS } from '../foreground.ts';
import { BackgroundWarmUp, WARM_UP_DELAY_MS } from '../telemetry/backgroundWarmUp.ts';
import type { TelemetryStore } from '../telemetry/store.ts';
import { telemetryWarningText } from '../telemetry/records.ts';
import type { SlimeDump } from './dump.ts';
import { looksLikeSlimeDir, sampleByIndex, SlimeRun, type SampleDumpSource } from './run.ts';
import { isRecord, pyNumber, responseLength, sampleIndex, sampleTrace, traceEvents, type SlimeSample, type SlimeValue } from './sample.ts';

function numbers(v: SlimeValue | undefined): number[] {
  return Array.isArray(v) ? v.map((x) => pyNumber(x) ?? (x === true ? 1 : 0)) : [];
}

function plain(v: SlimeValue | undefined): unknown {
  if (v === undefined) return null;
  if (Array.isArray(v)) return v.map(plain);
  if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  const n = pyNumber(v);
  if (n !== undefined) return n;
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (v instanceof NumpyScalar && typeof v.value === 'boolean') return v.value;
  return String(v);
}

/**
 * A sample's turns and tool calls as its trace records them. slime's `weight_versions` gets one entry per SGLang
 * request (a partial rollout resumed in the next step adds one to the same turn) and a tool's output goes into
 * the response, not the prompt: neither counts turns or tool calls. A generate function that traces its turns
 * marks each span with `turn_index` (slime's docs: `generate_with_tool`, `tool_call`, `tool_execution`) and opens
 * one `tool_call` span per call; failing those, its own `num_turns` / `num_tool_calls` end attrs (the last
 * recorded). Null when the trace records neither (slime's default generate records no turns).
 */
function traceTurns(s: SlimeSample): { turns: number | null; toolCalls: number | null } {
  const turnIndices = new Set<number>();
  let toolCallSpans = 0;
  let numTurns: number | null = null;
  let numToolCalls: number | null = null;
  const count = (v: SlimeValue | undefined): number | null => {
    const n = pyNumber(v);
    return n !== undefined && Number.isInteger(n) && n >= 0 ? n : null;
  };
  for (const e of traceEvents(sampleTrace(s))) {
    if (e.type === 'span_start' && e.name === 'tool_call') toolCallSpans++;
    if (!isRecord(e.attrs)) continue;
    const turn = count(e.attrs.turn_index);
    if (turn !== null) turnIndices.add(turn);
    if (e.type === 'span_end') {
      numTurns = count(e.attrs.num_turns) ?? numTurns;
      numToolCalls = count(e.attrs.num_tool_calls) ?? numToolCalls;
    }
  }
  return { turns: turnIndices.size > 0 ? turnIndices.size : numTurns, toolCalls: toolCallSpans > 0 ? toolCallSpans : numToolCalls };
}

/** A slime sample as the format-neutral sample record. */
export function sampleRecord(s: SlimeSample): SampleRecord {
  const f = s.fields;
  const spec = isRecord(f.spec_info) ? f.spec_info : {};
  const cache = isRecord(f.prefix_cache_info) ? f.prefix_cache_info : {};
  const reward = f.reward === true ? 1 : f.reward === false ? 0 : (pyNumber(f.reward) ?? null);
  return {
    position: s.row,
    index: sampleIndex(s),
    groupIndex: pyNumber(f.group_index) ?? null,
    status: typeof f.status === 'string' ? f.status : 'unknown',
    removeSample: f.remove_sample === true,
    responseLength: responseLength(s),
    totalLength: Array.isArray(f.tokens) ? f.tokens.length : 0,
    reward: reward !== null && Number.isFinite(reward) ? reward : null,
    weightVersions: Array.isArray(f.weight_versions) ? f.weight_versions.map((v) => (typeof v === 'string' ? v : String(pyNumber(v) ?? v))) : [],
    promptToolMessages: Array.isArray(f.prompt) ? f.prompt.filter((m) => isRecord(m) && m.role === 'tool').length : null,
    ...traceTurns(s),
    nonGenerationTime: pyNumber(f.non_generation_time) ?? 0,
    specAcceptTokens: pyNumber(spec.spec_accept_token_num) ?? null,
    specDraftTokens: pyNumber(spec.spec_draft_token_num) ?? null,
    cachedTokens: pyNumber(cache.cached_tokens) ?? null,
    totalPromptTokens: pyNumber(cache.total_prompt_tokens) ?? null,
  };
}

/** The conversation: the chat prompt (or the prompt text as a user turn), then the response. */
export function conversationRecord(s: SlimeSample): ConversationRecord {
  const f = s.fields;
  const messages: unknown[] = [];
  if (Array.isArray(f.prompt)) {
    for (const m of f.prompt) if (isRecord(m)) messages.push(plain(m));
  } else if (typeof f.prompt === 'string') messages.push({ role: 'user', content: f.prompt });
  if (typeof f.response === 'string') messages.push({ role: 'assistant', content: f.response });
  const reward = pyNumber(f.reward);
  return {
    sample_index: sampleIndex(s) ?? s.row,
    group_index: pyNumber(f.group_index) ?? null,
    status: typeof f.status === 'string' ? f.status : null,
    reward: reward !== undefined && Number.isFinite(reward) ? reward : null,
    prompt: plain(f.prompt),
    messages,
    label: plain(f.label),
    metadata: plain(f.metadata),
  };
}

function text(v: SlimeValue | undefined): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return JSON.stringify(plain(v));
}

/** The searchable text of a slime sample. */
function sampleTextRecord(s: SlimeSample): SampleTextRecord {
  const r = sampleRecord(s);
  const ids: string[] = [];
  const trace = sampleTrace(s);
  if (typeof trace?.trace_id === 'string') ids.push(trace.trace_id);
  for (const e of traceEvents(trace)) if (isRecord(e.attrs) && typeof e.attrs.sglang_request_id === 'string') ids.push(e.attrs.sglang_request_id);
  if (typeof s.fields.session_id === 'string') ids.push(s.fields.session_id);
  return {
    sampleIndex: r.index ?? s.row,
    groupIndex: r.groupIndex,
    status: r.status,
    reward: r.reward,
    fields: { prompt: text(s.fields.prompt), response: text(s.fields.response), label: text(s.fields.label), metadata: text(s.fields.metadata) },
    ids,
  };
}

function numberList(v: SlimeValue | undefined): Float64Array | null {
  return Array.isArray(v) ? Float64Array.from(numbers(v)) : null;
}

/** A sample's own train-side values (log_probs, ref_log_probs, entropy, advantages) as a train row, or null without them. */
function trainRowOf(s: SlimeSample): TrainRow | null {
  const f = s.fields;
  const index = sampleIndex(s);
  const logProbs = numberList(f.log_probs);
  const entropy = numberList(f.entropy);
  const advantages = numberList(f.advantages);
  if (index === null || (logProbs === null && entropy === null && advantages === null)) return null;
  return {
    sampleIndex: index,
    rank: 0,
    responseLength: responseLength(s),
    totalLength: Array.isArray(f.tokens) ? f.tokens.length : 0,
    reward: null,
    lossMask: numberList(f.loss_mask),
    logProbs,
    rolloutLogProbs: numberList(f.rollout_log_probs),
    refLogProbs: numberList(f.ref_log_probs),
    entropy,
    refEntropy: null,
    advantages,
    returns: null,
    truncated: null,
    weightVersions: null,
    alignmentFailed: false,
  };
}

/** The dumps of a slime run as the run model. `traced` gives the queries the samples themselves (traces). */
export class SlimeRunModel implements RunModel, TraceSource {
  readonly roots: readonly string[];
  /** Every sample's trace comes with its dump. */
  readonly traces: TraceSource = this;

  constructor(
    readonly run: SampleDumpSource,
    /** None for slime's own dumps; a collected run's streams beside its samples. */
    readonly telemetry: TelemetryStore | null,
    /** Where derived data (search texts and indexes) may be kept; never inside the run. */
    readonly cacheDir: string | null = null,
    /** `slime`, or `collected` for the same samples recorded live by `rlsight collect`. */
    readonly format: string = 'slime',
  ) {
    this.roots = [run.root, ...(cacheDir ? [cacheDir] : [])];
    this.warmUp = telemetry ? new BackgroundWarmUp(telemetry, cacheDir !== null) : null;
    this.warmUp?.start(WARM_UP_DELAY_MS);
  }

  private readonly warmUp: BackgroundWarmUp | null;

  static fromDumpDetails(dir: string, cacheDir: string | null = null): SlimeRunModel {
    return new SlimeRunModel(SlimeRun.fromDumpDetails(dir), null, cacheDir);
  }

  /** `rlsight serve FILE.pt|GLOB`: the files a --save-debug-rollout-data template wrote. */
  static fromTemplate(spec: string): SlimeRunModel {
    return new SlimeRunModel(SlimeRun.fromTemplate(spec), null);
  }

  get dir(): string {
    return this.run.root;
  }

  rolloutIds(): Promise<RolloutIds> {
    return this.run.rolloutIds();
  }

  /** The step's dump with every sample as dumped (fields and trace). */
  async dump(rolloutId: number, evaluation: boolean): Promise<SlimeDump> {
    const d = await this.run.dump(rolloutId, evaluation);
    if (!d) throw new NotFound(`${evaluation ? 'eval ' : ''}rollout ${rolloutId} is not in this run`);
    return d;
  }

  /** Every readable dump of one kind, ascending (unreadable ones are reported through warnings()). */
  allDumps(evaluation: boolean): Promise<SlimeDump[]> {
    return this.run.allDumps(evaluation);
  }

  async stepStamps(evaluation: boolean): Promise<Array<{ rolloutId: number; stamp: string }>> {
    const ids = await this.run.rolloutIds();
    return Promise.all((evaluation ? ids.eval : ids.train).map(async (rolloutId) => ({ rolloutId, stamp: await this.run.stamp(rolloutId, evaluation) })));
  }

  readableDump(rolloutId: number, evaluation: boolean): Promise<SlimeDump | null> {
    return this.run.readable(rolloutId, evaluation);
  }

  async step(rolloutId: number, evaluation: boolean): Promise<StepRecords> {
    const d = await this.dump(rolloutId, evaluation);
    const samples = d.samples.map(sampleRecord);
    // slime records no train side; samples a trainer recorded through rlsight's client may carry one
    const digests = new Map<number, TrainDigest>();
    for (const s of d.samples) {
      const row = trainRowOf(s);
      if (row !== null && !digests.has(row.sampleIndex)) digests.set(row.sampleIndex, digestTrainRow(row));
    }
    // slime dumps the samples before reward normalisation: their rewards are the raw rewards.
    // SGLang's weight versions count weight updates (from wherever the engine started), not rollout ids
    return { rolloutId, evaluation, samples, digests, rawRewards: evaluation ? null : samples.map((s) => s.reward), weightVersionScale: 'update' };
  }

  private async sample(rolloutId: number, index: number, evaluation: boolean): Promise<SlimeSample> {
    const s = sampleByIndex(await this.dump(rolloutId, evaluation), index);
    if (!s) throw new NotFound(`sample ${index} is not in ${evaluation ? 'eval ' : ''}rollout ${rolloutId}`);
    return s;
  }

  async sampleTokens(rolloutId: number, index: number, evaluation: boolean): Promise<SampleTokenRecord> {
    const s = await this.sample(rolloutId, index, evaluation);
    const lp = Array.isArray(s.fields.rollout_log_probs) ? numbers(s.fields.rollout_log_probs) : null;
    const mask = numberList(s.fields.loss_mask);
    // slime writes no train side; a trainer recording through rlsight's client may (log_probs, ref_log_probs, entropy, advantages)
    const logProbs = numberList(s.fields.log_probs);
    const refLogProbs = numberList(s.fields.ref_log_probs);
    const entropy = numberList(s.fields.entropy);
    const advantages = numberList(s.fields.advantages);
    const hasTrain = mask !== null || logProbs !== null || refLogProbs !== null || entropy !== null || advantages !== null;
    return {
      rolloutId,
      sampleIndex: index,
      evaluation,
      totalLength: Array.isArray(s.fields.tokens) ? s.fields.tokens.length : 0,
      responseLength: responseLength(s),
      tokens: numbers(s.fields.tokens),
      rolloutLogProbs: lp,
      train: hasTrain ? { lossMask: mask, logProbs, rolloutLogProbs: logProbs && lp ? Float64Array.from(lp) : null, refLogProbs, entropy, refEntropy: null, advantages, returns: null } : null,
      decodeToken: null,
    };
  }

  async conversations(rolloutId: number, evaluation: boolean): Promise<ReadonlyMap<number, ConversationRecord>> {
    const d = await this.dump(rolloutId, evaluation);
    const out = new Map<number, ConversationRecord>();
    for (const s of d.samples) {
      const c = conversationRecord(s);
      if (!out.has(c.sample_index)) out.set(c.sample_index, c);
    }
    return out;
  }

  async sampleTexts(rolloutId: number, evaluation: boolean): Promise<SampleTextRecord[]> {
    return (await this.dump(rolloutId, evaluation)).samples.map(sampleTextRecord);
  }

  /** `sampleTexts` in batches handed out while the step's dump is decoded. */
  async *sampleTextBatches(rolloutId: number, evaluation: boolean): AsyncGenerator<SampleTextRecord[]> {
    let any = false;
    for await (const batch of this.run.sampleBatches(rolloutId, evaluation)) {
      any = true;
      yield batch.map(sampleTextRecord);
    }
    // An empty step hands out nothing; a missing one is NotFound, as `sampleTexts` says.
    if (!any) await this.dump(rolloutId, evaluation);
  }

  /** Bytes of the step's dump files (a source that cannot tell counts as too many to read at once). */
  stepBytes(rolloutId: number): Promise<number> {
    return this.dumpBytes(rolloutId, false);
  }

  dumpBytes(rolloutId: number, evaluation: boolean): Promise<number> {
    return this.run.bytes?.(rolloutId, evaluation) ?? Promise.resolve(Infinity);
  }

  /** The requests being answered go first: the background reads only once none has been for QUIET_MS. */
  backgroundTurn(): Promise<void> {
    return foreground.idle(QUIET_MS);
  }

  /** The step's dump file identity, size and mtime (see SlimeRun.stamp). */
  stepStamp(rolloutId: number, evaluation: boolean): Promise<string> {
    return this.run.stamp(rolloutId, evaluation);
  }

  hasTokenizer(): boolean {
    return false;
  }

  async advance(): Promise<void> {
    this.run.refresh();
    this.telemetry?.follow();
    this.warmUp?.start();
  }

  warnings(): string[] {
    // a run `rlsight collect` recorded has telemetry streams too: their skipped lines are the run's to say
    return [...this.run.warnings(), ...(this.telemetry?.warnings() ?? []).map(telemetryWarningText)];
  }

  async close(): Promise<void> {
    this.warmUp?.close();
    this.telemetry?.close();
  }
}

export async function openSlimeRun(dir: string, opts: OpenRunOptions = {}): Promise<RunModel> {
  const root = resolve(dir);
  let cacheDir: string | null = null;
  if (opts.cacheDir !== undefined) {
    cacheDir = resolve(opts.cacheDir);
    if (isInside(root, cacheDir)) throw new RefusedOption('cacheDir', 'the cache directory must lie outside the run directory (nothing is written inside a run)');
  }
  return SlimeRunModel.fromDumpDetails(root, cacheDir);
}

/** Tried before miles: slime's layout is rollout_data/ without miles' dashboards, mirror or sidecars. */
export const slimeAdapter: RunAdapter = {
  format: 'slime',
  detect: looksLikeSlimeDir,
  open: openSlimeRun,
};
