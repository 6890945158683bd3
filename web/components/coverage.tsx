// A partial whole-window answer (the server still reads the run's history) or step-wide answer (the server still
// reads the run's steps): how much it covers, and the refresh token that asks for it again as more is read.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useStore } from '../store.ts';
import type { Coverage, StepCoverage } from '../../src/wire/index.ts';
import { warmUpProgress } from './warmUpBar.tsx';
import { useApi, type Loaded } from '../useApi.ts';

/** Changes when the server has read more hours than `coverage` covers; stays put for a complete answer. */
export function useRefine(coverage: Coverage | undefined): number {
  const p = useStore(warmUpProgress);
  const token = useRef(0);
  if (coverage && p && p.hours_done > coverage.hours_done) token.current = p.hours_done;
  return token.current;
}

/** How long a partial step-wide answer is shown before it is asked again. */
const STEP_REFINE_MS = 1000;

/**
 * `useApi` for a step-wide answer that may cover only the steps read so far: asked again a moment after each
 * answer `partial` finds partial (it gives the coverage still waited for), until one is not.
 */
export function useStepwiseApi<T>(key: string | null, load: (signal: AbortSignal) => Promise<T>, refresh: unknown, partial: (data: T) => StepCoverage | undefined): Loaded<T> {
  const [asked, setAsked] = useState(0);
  const answer = useApi(key, load, `${String(refresh)}|${asked}`);
  const waiting = answer.data === null ? undefined : partial(answer.data);
  useEffect(() => {
    if (!waiting) return;
    const timer = setTimeout(() => setAsked((n) => n + 1), STEP_REFINE_MS);
    return () => clearTimeout(timer);
  }, [waiting]);
  return answer;
}

/** The least read of some partial step-wide answers' coverages (several runs, several series), if any is partial. */
export function leastStepCoverage(coverages: Iterable<StepCoverage | undefined>): StepCoverage | undefined {
  let least: StepCoverage | undefined;
  for (const c of coverages) if (c && (!least || c.steps_done / c.steps_total < least.steps_done / least.steps_total)) least = c;
  return least;
}

/** A progress bar and "4/6 h read" (or "12/300 steps read") beside a partial answer's title; nothing for a complete one. */
export function CoverageNote({ coverage }: { coverage: Coverage | StepCoverage | undefined }) {
  if (!coverage) return null;
  if ('steps_done' in coverage) {
    return (
      <ReadSoFar
        done={coverage.steps_done}
        total={coverage.steps_total}
        unit="steps"
        title="the server is still reading this run's steps (one at a time, a step you open first): this answer covers the steps read so far and refines itself as more are read"
      />
    );
  }
  return (
    <ReadSoFar
      done={coverage.hours_done}
      total={coverage.hours_total}
      unit="h"
      title="the server is still reading this run's history: this answer covers the hours read so far (the hatched stretches are not read yet) and refines itself as more are read"
    />
  );
}

function ReadSoFar({ done, total, unit, title }: { done: number; total: number; unit: string; title: string }) {
  const pct = total > 0 ? (100 * done) / total : 0;
  return (
    <span class="warmup coverage" data-testid="coverage" role="progressbar" aria-valuemin={0} aria-valuemax={total} aria-valuenow={done} title={title}>
      <span class="warmup-track">
        <span class="warmup-fill" style={{ width: `${pct.toFixed(1)}%` }} />
      </span>
      {done}/{total} {unit} read
    </span>
  );
}
