// Lane selection: grammar terms as chips, an input the server validates before it reaches the URL, outlier quick picks.
import { useState } from 'preact/hooks';
import { ApiError, errorText, getJson } from '../../api.ts';
import { fmtNum } from '../../format.ts';
import type { Lane, Outlier } from '../../../src/wire/index.ts';
import type { Viewport } from './viewport.ts';

interface Props {
  grammar: string | null;
  defaultGrammar: string | null;
  /** The server's answer to the grammar in the URL, when it rejected it. */
  urlError: unknown;
  vp: Viewport;
  lanes: Lane[];
  phaseNames: string[];
  onChange: (grammar: string | null, replace?: boolean) => void;
}

export function splitTerms(g: string | null): string[] {
  return (g ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t && t !== 'all');
}

/** Asks the server whether a selection parses; null when valid, else its message. */
export async function validateGrammar(grammar: string): Promise<string | null> {
  try {
    await getJson('rlsight/lanes', { lanes: grammar });
    return null;
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) return e.detail;
    throw e;
  }
}

export function LaneSelection(p: Props) {
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [pick, setPick] = useState<{ label: string; outliers: Outlier[] } | null>(null);
  const [phase, setPhase] = useState(p.phaseNames.includes('update_weights') ? 'update_weights' : (p.phaseNames[0] ?? 'update_weights'));
  const terms = splitTerms(p.grammar ?? p.defaultGrammar);
  const indexOf = new Map(p.lanes.map((l) => [`${l.node}:${l.gpu}`, l.index]));

  async function add(e: Event) {
    e.preventDefault();
    const term = text.trim();
    if (!term) return;
    const candidate = [...splitTerms(p.grammar ?? p.defaultGrammar), term].join(', ');
    setBusy(true);
    try {
      const msg = await validateGrammar(candidate);
      if (msg) {
        setError(msg);
        return;
      }
      setError(null);
      setText('');
      setPick(null);
      p.onChange(candidate);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }

  function remove(i: number) {
    const rest = terms.filter((_, j) => j !== i);
    setPick(null);
    p.onChange(rest.length ? rest.join(', ') : 'all');
  }

  async function quickPick(criterion: string, label: string) {
    setBusy(true);
    try {
      const r = await getJson<{ outliers: Outlier[] }>('timeline/outliers', { criterion, t0: p.vp.t0, t1: p.vp.t1, top_k: 8 });
      if (!r.outliers.length) {
        setError(`${label}: no lane has data for that in this window`);
        return;
      }
      setError(null);
      setPick({ label, outliers: r.outliers });
      p.onChange(r.outliers.map((o) => `gpu:${o.node}:${o.gpu}`).join(', '));
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div class="lane-selection">
      <div class="lane-row">
        <strong style={{ marginRight: '4px' }}>Lanes</strong>
        {terms.length === 0 ? (
          <span class="chip">all</span>
        ) : p.grammar === null ? (
          <span class="chip" title={terms.join(', ')} data-testid="default-lanes">
            {terms.length} evenly spaced lanes ({terms[0]} … {terms.at(-1)})
            <button aria-label="show all lanes instead" onClick={() => p.onChange('all')}>
              ×
            </button>
          </span>
        ) : (
          terms.map((t, i) => (
            <span class="chip" key={`${t}-${i}`} title={p.grammar === null ? 'default selection (evenly spaced)' : t}>
              {t}
              <button aria-label={`remove ${t}`} onClick={() => remove(i)}>
                ×
              </button>
            </span>
          ))
        )}
        <form onSubmit={add} style={{ display: 'contents' }}>
          <input
            class={`grammar${error ? ' invalid' : ''}`}
            data-testid="lane-grammar"
            data-search
            aria-label="add lanes"
            aria-invalid={error ? 'true' : 'false'}
            placeholder="add: g:0-7 · rank:0-3 · node:<ip> · gpu:<node>:<i> · engine:<port> · role:train · every:8  (Enter)"
            value={text}
            onInput={(e) => {
              setText((e.target as HTMLInputElement).value);
              if (error) setError(null);
            }}
          />
        </form>
        {terms.length > 0 && (
          <button onClick={() => (setPick(null), setError(null), p.onChange('all'))} title="show all lanes">
            all lanes
          </button>
        )}
      </div>
      <div class="lane-row picks">
        <span class="muted" style={{ fontSize: '12px' }}>
          quick picks (this window):
        </span>
        <button disabled={busy} onClick={() => quickPick('lowest_util', 'lowest util')}>
          lowest util
        </button>
        <span class="seg">
          <button disabled={busy} onClick={() => quickPick(`slowest_phase:${phase}`, `slowest ${phase}`)}>
            slowest
          </button>
          <select aria-label="phase for the slowest pick" value={phase} onChange={(e) => setPhase((e.target as HTMLSelectElement).value)}>
            {(p.phaseNames.length ? p.phaseNames : ['update_weights']).map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </span>
        {pick && (
          <span class="muted" style={{ fontSize: '12px' }} data-testid="pick-result">
            {pick.label}: {pick.outliers.map((o) => `g${indexOf.get(`${o.node}:${o.gpu}`) ?? '?'} ${fmtNum(o.score)}`).join(' · ')}
          </span>
        )}
        {busy && <span class="spinner" />}
      </div>
      {error && (
        <div class="inline-error" role="alert" data-testid="lane-error">
          {error}
        </div>
      )}
      {!error && p.urlError ? (
        <div class="inline-error" role="alert" data-testid="lane-error">
          The selection in the address is not valid: {errorText(p.urlError)}.{' '}
          <button onClick={() => p.onChange(null, true)}>reset selection</button>
        </div>
      ) : null}
    </div>
  );
}
