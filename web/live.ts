// Run catalog (/api/meta) kept fresh by the server's event stream, so live runs update without a reload.
import { apiUrl, getJson } from './api.ts';
import { chosenRun } from './chosenRun.ts';
import { store } from './store.ts';
import type { Meta } from '../src/wire/index.ts';
import type { RunEvent } from '../src/wire/index.ts';

export const meta = store<Meta | null>(null);
export const metaError = store<unknown>(null);
/** Bumped whenever the server reports new data; views refetch what they show. */
export const liveTick = store(0);
export const liveConnected = store(false);

let inflight: Promise<void> | null = null;
/** The run `meta` describes: an answer for a run no longer chosen is dropped. */
let metaRun: string | null = chosenRun.get();

/** How long a meta answered over some of the run's steps (`coverage`) is shown before it is asked again. */
const META_REFINE_MS = 1000;
let refine: ReturnType<typeof setTimeout> | null = null;

/** Whether `meta` describes `run` (null: the server's first run): a view is never drawn with another run's meta. */
export function metaDescribes(run: string | null): boolean {
  return metaRun === run;
}

export function refreshMeta(): Promise<void> {
  const run = chosenRun.get();
  if (run !== metaRun) {
    metaRun = run;
    inflight = null;
    meta.set(null);
    metaError.set(null);
  }
  if (inflight) return inflight;
  const mine: Promise<void> = getJson<Meta>('meta')
    .then((m) => {
      if (metaRun !== run) return;
      meta.set(m);
      metaError.set(null);
      // named the keys of the steps read so far (the server reads the others meanwhile): asked again until complete
      if (m.coverage && refine === null)
        refine = setTimeout(() => {
          refine = null;
          void refreshMeta();
        }, META_REFINE_MS);
    })
    .catch((e) => {
      if (metaRun === run && !meta.get()) metaError.set(e);
    })
    .finally(() => {
      if (inflight === mine) inflight = null;
    });
  inflight = mine;
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

let sourceRun: string | null = null;

/** Whether the app follows a live run (startLive was called): the stream is open while the tab is shown. */
let following = false;

/** Opens the event stream of the chosen run (its own feed under `/api/runs/{id}/events`), closing another run's. */
export function startLive(): void {
  if (typeof EventSource === 'undefined') return;
  following = true;
  const run = chosenRun.get();
  if (source && sourceRun === run) return;
  source?.close();
  source = null;
  sourceRun = run;
  // a hidden tab holds no stream: a browser allows six connections to one server, and every open tab's
  // stream would take one of them from the tabs in view
  if (typeof document !== 'undefined' && document.visibilityState === 'hidden') return;
  source = new EventSource(apiUrl('events'));
  source.onopen = () => liveConnected.set(true);
  source.onerror = () => liveConnected.set(false);
  for (const name of EVENT_NAMES) source.addEventListener(name, onServerChange);
}

if (typeof document !== 'undefined') {
  document.addEventListener('visibilitychange', () => {
    if (!following) return;
    if (document.visibilityState === 'hidden') {
      source?.close();
      source = null;
      liveConnected.set(false);
    } else {
      startLive();
      // what arrived while the tab was hidden
      onServerChange();
    }
  });
}
