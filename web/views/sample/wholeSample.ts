// The whole of a sample's tokens, for the overview, the whole-sample chart and peak, and windows cut locally:
// one request when the sample is at most CHUNK_TOKENS long, else consecutive ranges of that size joined as they land.
import { useEffect, useState } from 'preact/hooks';
import { getJson, isAbort } from '../../api.ts';
import type { TokenView } from '../../../src/wire/index.ts';
import { CHUNK_TOKENS, joinTokens } from './tokenSlice.ts';

export interface WholeSample {
  /** The tokens read so far, from position 0 (all of them once `done`). */
  view: TokenView | null;
  done: boolean;
  error: unknown;
}

/** The last few samples read whole, by request URL (a tab switch or j/k back shows them at once). */
const kept = new Map<string, TokenView>();
const KEEP = 4;

function keep(key: string, v: TokenView): void {
  kept.delete(key);
  kept.set(key, v);
  while (kept.size > KEEP) kept.delete(kept.keys().next().value!);
}

/**
 * `key` names the sample (its tokens URL without a range), `seed` is a window already answered: it gives the
 * length, and when it starts at 0 it is the first part of the whole (a sample it covers needs no more request).
 */
export function useWholeSample(key: string, path: string, evaluation: boolean, seed: TokenView | null): WholeSample {
  const [state, setState] = useState<{ key: string; view: TokenView | null; error: unknown }>({ key, view: null, error: null });
  const complete = kept.get(key) ?? null;
  const total = seed ? seed.total_len : null;
  const seedIsWhole = !!seed && seed.start === 0 && seed.end >= seed.total_len;
  useEffect(() => {
    if (complete || !seed || total === null) return;
    if (seedIsWhole) {
      keep(key, seed);
      setState({ key, view: seed, error: null });
      return;
    }
    const ctrl = new AbortController();
    (async () => {
      let acc: TokenView | null = seed.start === 0 ? seed : null;
      if (acc) setState({ key, view: acc, error: null });
      for (let s = acc ? acc.end : 0; s < total; s += CHUNK_TOKENS) {
        const part = await getJson<TokenView>(path, { start: s, end: Math.min(total, s + CHUNK_TOKENS), eval: evaluation }, ctrl.signal);
        if (ctrl.signal.aborted) return;
        acc = acc ? joinTokens(acc, part) : part;
        if (acc.end >= total) keep(key, acc);
        setState({ key, view: acc, error: null });
      }
    })().catch((error) => {
      if (!ctrl.signal.aborted && !isAbort(error)) setState({ key, view: null, error });
    });
    return () => ctrl.abort();
  }, [key, total, seedIsWhole, !!complete]);
  if (complete) return { view: complete, done: true, error: null };
  const mine = state.key === key;
  return { view: mine ? state.view : null, done: false, error: mine ? state.error : null };
}
