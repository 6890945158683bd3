// Step selector: previous/next, a slider over the recorded steps, a validated number input, and the train/eval switch.
import { useEffect, useRef, useState } from 'preact/hooks';
import { href, navigate } from '../../route.ts';
import type { Meta } from '../../../src/wire/index.ts';

export function stepHref(id: number, evaluation: boolean, keep?: URLSearchParams): string {
  const p = new URLSearchParams(keep);
  p.delete('group');
  if (evaluation) p.set('eval', '1');
  else p.delete('eval');
  return href(`/rollout/${id}`, p);
}

/** What the step slider at index `i` says: the step it stands on, and where that is among the recorded ones. */
function sliderText(ids: number[], i: number, evaluation: boolean): string {
  return ids[i] === undefined ? 'no step' : `${evaluation ? 'eval step' : 'step'} ${ids[i]} (${i + 1} of ${ids.length})`;
}

export function StepBar({ meta, id, evaluation, params }: { meta: Meta; id: number; evaluation: boolean; params: URLSearchParams }) {
  const ids = evaluation ? meta.rollout_ids.eval : meta.rollout_ids.train;
  const pos = ids.indexOf(id);
  const [text, setText] = useState(String(id));
  const [err, setErr] = useState<string | null>(null);
  // Where the slider was moved to (drag, click, keys) until that step is open; shown instead of the open step's.
  const [slid, setSlid] = useState<number | null>(null);
  const pending = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => {
    setText(String(id));
    setErr(null);
    setSlid(null);
    // Train and eval share step ids: switching between them is a new step too.
  }, [id, evaluation]);
  useEffect(() => () => clearTimeout(pending.current), []);
  const go = (n: number, ev = evaluation) => {
    clearTimeout(pending.current);
    navigate(stepHref(n, ev, params));
  };
  /** Opens the slider's step once it rests (a held arrow key loads the step it stops at, not each one passed). */
  const slide = (at: number, wait: number) => {
    setSlid(at);
    const n = ids[at];
    if (n === undefined) return;
    setText(String(n));
    clearTimeout(pending.current);
    pending.current = setTimeout(() => n !== id && go(n), wait);
  };
  const nearest = (list: number[]) => list.reduce((best, v) => (Math.abs(v - id) < Math.abs(best - id) ? v : best), list[0]!);

  return (
    <div class="step-bar panel">
      <span class="seg" role="group" aria-label="train or eval">
        <button class={!evaluation ? 'active' : ''} disabled={!meta.rollout_ids.train.length} onClick={() => go(nearest(meta.rollout_ids.train), false)}>
          train
        </button>
        <button
          class={evaluation ? 'active' : ''}
          disabled={!meta.rollout_ids.eval.length}
          title={meta.rollout_ids.eval.length ? `eval steps: ${meta.rollout_ids.eval.join(', ')}` : 'this run has no eval steps'}
          onClick={() => go(nearest(meta.rollout_ids.eval), true)}
        >
          eval{meta.rollout_ids.eval.length ? ` (${meta.rollout_ids.eval.length})` : ''}
        </button>
      </span>
      <button disabled={pos <= 0} onClick={() => go(ids[pos - 1]!)} title="previous step (k)" aria-label="previous step">
        ◀
      </button>
      <input
        type="range"
        min={0}
        max={Math.max(0, ids.length - 1)}
        value={slid ?? Math.max(0, pos)}
        aria-label="step"
        // The slider moves through the recorded steps by index: it says the step, not the index.
        aria-valuetext={sliderText(ids, slid ?? Math.max(0, pos), evaluation)}
        data-testid="step-slider"
        // A drag fires `input` as it moves and `change` when let go; a click or a key fires both at once.
        onInput={(e) => slide(Number((e.target as HTMLInputElement).value), 600)}
        onChange={(e) => slide(Number((e.target as HTMLInputElement).value), 150)}
      />
      <button disabled={pos < 0 || pos >= ids.length - 1} onClick={() => go(ids[pos + 1]!)} title="next step (j)" aria-label="next step">
        ▶
      </button>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const n = Number(text);
          if (!/^\d+$/.test(text.trim()) || !ids.includes(n)) {
            setErr(`no ${evaluation ? 'eval' : 'train'} step ${text.trim() || '(empty)'}; recorded: ${ids.length > 12 ? `${ids[0]}–${ids.at(-1)}` : ids.join(', ')}`);
            return;
          }
          setErr(null);
          go(n);
        }}
      >
        <label>
          {evaluation ? 'eval step' : 'step'}{' '}
          <input type="number" value={text} data-testid="step-input" aria-label="step number" onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        </label>
      </form>
      <span class="muted">
        {pos >= 0 ? `${pos + 1} / ${ids.length}` : `not recorded (${ids.length} steps)`}
      </span>
      {err && (
        <span class="inline-error" role="alert">
          {err}
        </span>
      )}
    </div>
  );
}
