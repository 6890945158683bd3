// The recorded conversation of one sample, from its step's conversation records.
import { NotFound } from '../run/errors.ts';
import type { ConversationRecord } from '../run/model.ts';
import type { Conversation } from '../wire/rollout.ts';

/** A sample (or a whole step) without a recorded conversation: a 404 on the reference route. */
export class NoConversationRecorded extends NotFound {}

/** The sample's conversation, served as the run wrote it; NoConversationRecorded when the step recorded none for it. */
export function sampleConversation(conversations: ReadonlyMap<number, ConversationRecord> | null, rolloutId: number, sampleIndex: number): Conversation {
  if (!conversations) throw new NoConversationRecorded(`no conversation was recorded in rollout ${rolloutId}`);
  const row = conversations.get(sampleIndex);
  if (!row) throw new NoConversationRecorded(`sample ${sampleIndex} has no recorded conversation in rollout ${rolloutId}`);
  return row as Conversation;
}

/**
 * rlsight's answer for a sample without a recorded conversation (the sidecar holds only some samples):
 * a 200 with the conversation's shape, empty, and `recorded: false` saying why.
 */
export function noConversation(sampleIndex: number, why: string): Conversation {
  return { sample_index: sampleIndex, group_index: null, status: null, reward: null, prompt: null, messages: [], recorded: false, note: `no conversation recorded: ${why}` };
}
