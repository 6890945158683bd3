// `/api/events`: what `--follow` announces when a run grows (server-sent events).

export type RunEventName = 'steps' | 'rollout' | 'keys' | 'lanes' | 'edge';

export interface RunEvent {
  event: RunEventName;
  data: Record<string, unknown>;
}
