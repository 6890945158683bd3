// The background warm-up's progress (hours of telemetry history persisted by the server, of all): a
// bar in the header while it runs. Polled on its own, so views do not re-render with each tick.
import { useEffect } from 'preact/hooks';
import { getJson } from '../api.ts';
import { store, useStore } from '../store.ts';
import type { Meta, WarmUpProgress } from '../../src/wire/index.ts';

const POLL_MS = 2000;
/** The warm-up's progress as last polled (null before the first poll); partial answers refine on it (see coverage.tsx). */
export const warmUpProgress = store<WarmUpProgress | null>(null);
const progress = warmUpProgress;

export function WarmUpBar({ initial }: { initial: WarmUpProgress | undefined }) {
  const p = useStore(progress) ?? initial ?? null;
  const running = initial !== undefined;
  useEffect(() => {
    if (!running) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async (): Promise<void> => {
      try {
        const m = await getJson<Meta>('meta');
        progress.set(m.warmup ?? { hours_done: p?.hours_total ?? 0, hours_total: p?.hours_total ?? 0 });
        if (!m.warmup) return;
      } catch {
        /* the next poll retries */
      }
      if (!stopped) timer = setTimeout(poll, POLL_MS);
    };
    timer = setTimeout(poll, POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [running]);
  if (p === null || p.hours_done >= p.hours_total) return null;
  const pct = p.hours_total > 0 ? (100 * p.hours_done) / p.hours_total : 0;
  return (
    <span class="warmup" role="progressbar" aria-valuemin={0} aria-valuemax={p.hours_total} aria-valuenow={p.hours_done} title="the server is reading the run's telemetry history ahead, newest hours first; answers stay correct meanwhile">
      <span class="warmup-track">
        <span class="warmup-fill" style={{ width: `${pct.toFixed(1)}%` }} />
      </span>
      history {p.hours_done}/{p.hours_total} h
    </span>
  );
}
