// Run catalog (/api/meta) kept fresh by the server's event stream, so live runs update without a reload.
import { getJson } from './api.ts';
import { store } from './store.ts';
import type { Meta } from '../src/wire/index.ts';
import type { RunEvent } from '../src/wire/index.ts';

export const meta = store<Meta | null>(null);
export const metaError = store<unknown>(null);
/** Bumped whenever the server reports new data; views refetch what they show. */
export const liveTick = store(0);
export const liveConnected = store(false);

let inflight: Promise<void> | null = null;

export function refreshMeta(): Promise<void> {
  inflight ??= getJson<Meta>('meta')
    .then((m) => {
      meta.set(m);
      metaError.set(null);
    })
    .catch((e) => {
      if (!meta.get()) metaError.set(e);
    })
    .finally(() => {
      inflight = null;
    });
  return inflight;
}

let source: EventSource | null = null;
let timer: ReturnType<typeof setTimeout> | null = null;

function onServerChange() {
  // Events arrive in bursts (several streams grow at once): coalesce into one refresh.
  if (timer) return;
  timer = setTimeout(async () => {
    timer = null;
    await refreshMeta();
    liveTick.set(liveTick.get() + 1);
  }, 150);
}

// Every change the server announces (hello only opens the stream).
const EVENT_NAMES: RunEvent['event'][] = ['steps', 'rollout', 'keys', 'lanes', 'edge'];

export function startLive(): void {
  if (source || typeof EventSource === 'undefined') return;
  source = new EventSource('./api/events');
  source.onopen = () => liveConnected.set(true);
  source.onerror = () => liveConnected.set(false);
  for (const name of EVENT_NAMES) source.addEventListener(name, onServerChange);
}
