// The recorded conversation of one sample, from its step's conversation records.
import { NotFound } from '../run/errors.ts';
import type { ConversationRecord } from '../run/model.ts';
import type { Conversation } from '../wire/rollout.ts';

/** The sample's conversation, served as the run wrote it; NotFound when the step recorded none for it. */
export function sampleConversation(conversations: ReadonlyMap<number, ConversationRecord> | null, rolloutId: number, sampleIndex: number): Conversation {
  if (!conversations) throw new NotFound(`no conversation was recorded in rollout ${rolloutId}`);
  const row = conversations.get(sampleIndex);
  if (!row) throw new NotFound(`sample ${sampleIndex} has no recorded conversation in rollout ${rolloutId}`);
  return row as Conversation;
}
