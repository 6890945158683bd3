// The rollout dump `rollout_data/[eval_]{id}.pt`: one record per sample, in batch order.
import type { PyValue } from '../../formats/torch/value.ts';
import { DumpInconsistent } from '../errors.ts';
import type { SampleRecord } from '../model.ts';
import { asInt, asNumber, enumText, field, isDict, isList, scalarReward } from './pyFields.ts';
import { milesGlobal } from './globals.ts';

/** A sample of the dump: its record and, when the dump stands in for a missing parquet mirror, its tokens. */
export interface RolloutSample extends SampleRecord {
  tokens?: Int32Array;
  rolloutLogProbs?: Float32Array | null;
}

export interface RolloutDump {
  rolloutId: number;
  evaluation: boolean;
  samples: RolloutSample[];
}

/**
 * Samples one rollout dump may hold. A step of a real run has thousands (rollout batch x n_samples);
 * a million is far past any, and bounds what a small hostile file can make the summary allocate.
 */
export const MAX_SAMPLES_PER_DUMP = 1 << 20;

/**
 * The per-token lists of a sample whose values a dump decoded without tokens never reads (only the length
 * of `tokens`): such a decode may keep them as their lengths alone (`lengthOnlyUnder`).
 */
export const PER_TOKEN_LISTS: ReadonlySet<string> = new Set(['tokens', 'loss_mask', 'rollout_log_probs']);

/**
 * The text fields of a sample (and of its prompt's messages) that its record never reads: a decode for the
 * records alone may leave their long strings undecoded (`unreadTextUnder`).
 */
export const UNREAD_TEXTS: ReadonlySet<string> = new Set(['response', 'content']);

/** The decode options of a rollout dump read for its sample records alone (no tokens, no texts). */
export const RECORDS_ONLY = { typedLists: true, lengthOnlyUnder: PER_TOKEN_LISTS, unreadTextUnder: UNREAD_TEXTS, allowGlobal: milesGlobal } as const;

/** Turns the decoded pickle of a rollout dump into samples; `file` names it in errors. */
export function decodeRolloutDump(
  value: PyValue,
  expect: { rolloutId: number; evaluation: boolean; file: string; withTokens?: boolean },
): RolloutDump {
  const { file } = expect;
  if (!isDict(value)) throw new DumpInconsistent(file, 'not a rollout dump (top level is not a dict)');
  const rid = asInt(field(value, 'rollout_id'));
  if (rid !== expect.rolloutId) {
    throw new DumpInconsistent(file, `rollout_id is ${String(field(value, 'rollout_id'))}, expected ${expect.rolloutId}`);
  }
  const raw = field(value, 'samples');
  if (!isList(raw)) throw new DumpInconsistent(file, "'samples' is not a list");
  if (raw.length > MAX_SAMPLES_PER_DUMP) throw new DumpInconsistent(file, `${raw.length} samples exceed the limit of ${MAX_SAMPLES_PER_DUMP}`);
  // Python pickles each sample object once; one record listed at two positions (a memo reference) is forged.
  const seen = new Map<object, number>();
  raw.forEach((d, position) => {
    if (typeof d !== 'object' || d === null) return;
    const first = seen.get(d);
    if (first !== undefined) throw new DumpInconsistent(file, `sample at position ${position} is the same record as position ${first}`);
    seen.set(d, position);
  });
  const samples = raw.map((d, position) => decodeSample(d, position, file, expect.withTokens ?? false));
  return { rolloutId: rid, evaluation: expect.evaluation, samples };
}

/**
 * The first samples of a dump still being decoded (`raw`: the complete head of its samples list), as whole
 * groups: the samples of the last group seen may not all be decoded yet, so they wait for the rest (empty
 * when all are of one group; none are held back when the samples have no group). The whole decode still checks the dump as `decodeRolloutDump` does.
 */
export function decodeFirstSamples(raw: readonly PyValue[], file: string): RolloutSample[] {
  const samples = raw.map((d, position) => decodeSample(d, position, file, false));
  const last = samples.at(-1)?.groupIndex;
  if (last === null || last === undefined) return samples; // no groups to cut
  let end = samples.length;
  while (end > 0 && samples[end - 1]!.groupIndex === last) end--;
  return samples.slice(0, end);
}

/** A list as the unpickler yields it: plain, a tuple, or (with `typedLists`) an Int32Array/Float64Array of numbers. */
function isNumberList(v: PyValue | undefined): v is PyValue[] | Int32Array | Float64Array {
  return isList(v) || v instanceof Int32Array || v instanceof Float64Array;
}

function decodeSample(d: PyValue, position: number, file: string, withTokens: boolean): RolloutSample {
  if (!isDict(d)) throw new DumpInconsistent(file, `sample at position ${position} is not a dict`);
  const tokens = field(d, 'tokens');
  const totalLength = isNumberList(tokens) ? tokens.length : 0;
  const versions = field(d, 'weight_versions');
  const prompt = field(d, 'prompt');
  const spec = field(d, 'spec_info');
  const prefix = field(d, 'prefix_cache_info');
  const sample: RolloutSample = {
    position,
    index: asInt(field(d, 'index')),
    groupIndex: asInt(field(d, 'group_index')),
    status: enumText(field(d, 'status')) ?? 'pending',
    removeSample: field(d, 'remove_sample') === true,
    responseLength: asInt(field(d, 'response_length')) ?? 0,
    totalLength,
    reward: scalarReward(field(d, 'reward')),
    weightVersions: isList(versions) ? versions.map((v) => (typeof v === 'string' ? v : String(v))) : [],
    promptToolMessages: isList(prompt)
      ? prompt.filter((m) => isDict(m) && field(m, 'role') === 'tool').length
      : null,
    nonGenerationTime: asNumber(field(d, 'non_generation_time')) ?? 0,
    specAcceptTokens: asNumber(field(spec, 'spec_accept_token_num')),
    specDraftTokens: asNumber(field(spec, 'spec_draft_token_num')),
    cachedTokens: asNumber(field(prefix, 'cached_tokens')),
    totalPromptTokens: asNumber(field(prefix, 'total_prompt_tokens')),
  };
  if (withTokens) {
    sample.tokens =
      tokens instanceof Int32Array ? tokens : Int32Array.from(isNumberList(tokens) ? (tokens as ArrayLike<PyValue>) : [], (t) => asNumber(t) ?? 0);
    const lp = field(d, 'rollout_log_probs');
    // The mirror stores these as Float32; keep the same precision so both paths answer alike.
    sample.rolloutLogProbs = isNumberList(lp) ? Float32Array.from(lp as ArrayLike<PyValue>, (x) => asNumber(x) ?? NaN) : null;
  }
  return sample;
}

