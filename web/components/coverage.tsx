// A partial whole-window answer (the server still reads the run's history): how much it covers, and the
// refresh token that asks for it again each time the warm-up has read more hours.
import { useRef } from 'preact/hooks';
import { useStore } from '../store.ts';
import type { Coverage } from '../../src/wire/index.ts';
import { warmUpProgress } from './warmUpBar.tsx';

/** Changes when the server has read more hours than `coverage` covers; stays put for a complete answer. */
export function useRefine(coverage: Coverage | undefined): number {
  const p = useStore(warmUpProgress);
  const token = useRef(0);
  if (coverage && p && p.hours_done > coverage.hours_done) token.current = p.hours_done;
  return token.current;
}

/** A progress bar and "4/6 h read" beside a partial answer's title; nothing for a complete one. */
export function CoverageNote({ coverage }: { coverage: Coverage | undefined }) {
  if (!coverage) return null;
  const pct = coverage.hours_total > 0 ? (100 * coverage.hours_done) / coverage.hours_total : 0;
  return (
    <span
      class="warmup coverage"
      data-testid="coverage"
      role="progressbar"
      aria-valuemin={0}
      aria-valuemax={coverage.hours_total}
      aria-valuenow={coverage.hours_done}
      title="the server is still reading this run's history: this answer covers the hours read so far (the hatched stretches are not read yet) and refines itself as more are read"
    >
      <span class="warmup-track">
        <span class="warmup-fill" style={{ width: `${pct.toFixed(1)}%` }} />
      </span>
      {coverage.hours_done}/{coverage.hours_total} h read
    </span>
  );
}
