// The recorded conversation of one sample, from the trajectory sidecar `trajectory/[eval_]{id}.jsonl`.
import { DumpNotFound } from '../run/dumps/errors.ts';
import type { Conversation } from '../wire/rollout.ts';

/**
 * A sidecar row exactly as written: sample_index, group_index, status, reward, prompt, messages. It is
 * served as the run wrote it; only `sample_index` is checked, since rows are looked up by it.
 */
export type ConversationRow = Conversation;

/** The sidecar's rows keyed by `sample_index` (a later line for the same sample wins). */
export function conversationsBySample(rows: Iterable<ConversationRow>): Map<number, ConversationRow> {
  const out = new Map<number, ConversationRow>();
  for (const r of rows) if (typeof r.sample_index === 'number') out.set(r.sample_index, r);
  return out;
}

export function sampleConversation(
  conversations: ReadonlyMap<number, ConversationRow>,
  rolloutId: number,
  sampleIndex: number,
): ConversationRow {
  const row = conversations.get(sampleIndex);
  if (!row) throw new DumpNotFound(`sample ${sampleIndex} has no recorded conversation in rollout ${rolloutId}`);
  return row;
}
