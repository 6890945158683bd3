// Lane selection: grammar terms as chips, an input the server validates before it reaches the URL, outlier quick picks.
import { useEffect, useState } from 'preact/hooks';
import { route } from '../../route.ts';
import { useStore } from '../../store.ts';
import { ApiError, errorText, getJson } from '../../api.ts';
import type { Coverage, Lane, Outlier, OutliersAnswer } from '../../../src/wire/index.ts';
import { CoverageNote } from '../../components/coverage.tsx';
import type { Viewport } from './viewport.ts';
import { fmtScore, MAX_SCORE_DIGITS, pickTexts } from './scores.ts';

/** A quick pick on screen: its lanes worst first, each with its score; the lane view keeps that order. */
export interface QuickPick {
  label: string;
  unit: string;
  outliers: Outlier[];
  /** The grammar the pick wrote; the pick holds while the selection is still that. */
  grammar: string;
  /** Why no lane stands out, when none does. */
  noOutlier: string | null;
  /** Present when the pick ranked only the hours the server had read so far. */
  coverage?: Coverage;
}

/** Why none of the picked lanes is an outlier, or null when the worst stands out. */
function noOutlierReason(criterion: string, outliers: Outlier[], unit: string): string | null {
  const scores = outliers.map((o) => o.score);
  if (criterion === 'start_lag') return outliers.some((o) => o.straggler) ? null : `no lane is an outlier against its peers' spread (the score is its median lag behind the median rank)`;
  const spread = Math.max(...scores) - Math.min(...scores);
  const flat = criterion === 'lowest_util' ? spread < 2 : spread < 0.05 * Math.max(...scores.map(Math.abs));
  // a spread under one unit keeps two significant digits (never "within 0.0 s")
  const digits = spread > 0 && spread < 1 ? Math.min(MAX_SCORE_DIGITS, 1 - Math.floor(Math.log10(spread))) : 1;
  return flat && outliers.length > 1 ? `the ${outliers.length} picked lanes are within ${fmtScore(spread, unit, digits)} of each other` : null;
}

interface Props {
  grammar: string | null;
  defaultGrammar: string | null;
  /** The lane catalog (which the default selection is chosen from) is not in yet: no selection is named. */
  pending?: boolean;
  /** The server's answer to the grammar in the URL, when it rejected it. */
  urlError: unknown;
  vp: Viewport;
  lanes: Lane[];
  phaseNames: string[];
  onChange: (grammar: string | null, replace?: boolean) => void;
  pick: QuickPick | null;
  onPick: (pick: QuickPick | null) => void;
  /** How many late starters the default sample adds to its evenly spaced lanes. */
  lateCount: number;
}

export function splitTerms(g: string | null): string[] {
  return (g ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t && t !== 'all');
}

/** Asks the server whether a selection parses and what it picks: its message when invalid, else the lanes. */
export async function validateGrammar(grammar: string): Promise<{ error: string } | { lanes: Lane[] }> {
  try {
    return { lanes: (await getJson<{ lanes: Lane[] }>('rlsight/lanes', { lanes: grammar })).lanes };
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) return { error: e.detail };
    throw e;
  }
}

export function LaneSelection(p: Props) {
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Opening the plain view (`#/timeline`, a link or Back) starts the selection afresh: no stale text or error.
  const r = useStore(route);
  const plain = [...r.params.keys()].every((k) => k === 'run');
  useEffect(() => {
    if (!plain) return;
    setText('');
    setError(null);
  }, [plain, r]);
  const pick = p.pick;
  const setPick = p.onPick;
  // The chosen phase stays chosen when a window lacks it (it is then listed as absent here).
  const [phase, setPhase] = useState(p.phaseNames.includes('update_weights') ? 'update_weights' : (p.phaseNames[0] ?? 'update_weights'));
  // Until the window's phases are known nothing is called absent.
  const absent = p.phaseNames.length > 0 && !p.phaseNames.includes(phase);
  const phaseOptions = absent || !p.phaseNames.length ? [...p.phaseNames, phase] : p.phaseNames;
  const terms = splitTerms(p.grammar ?? p.defaultGrammar);
  // The default sample stays one chip, also with terms added after it.
  const defaultTerms = splitTerms(p.defaultGrammar);
  const defaultLead = defaultTerms.length > 0 && (p.grammar === null || defaultTerms.every((t, i) => terms[i] === t)) ? defaultTerms.length : 0;
  const indexOf = new Map(p.lanes.map((l) => [`${l.node}:${l.gpu}`, l.index]));

  async function add(e: Event) {
    e.preventDefault();
    const term = text.trim();
    if (!term) return;
    const candidate = [...splitTerms(p.grammar ?? p.defaultGrammar), term].join(', ');
    setBusy(true);
    try {
      const checked = await validateGrammar(candidate);
      if ('error' in checked) {
        setError(checked.error);
        return;
      }
      // A valid term that picks nothing would silently change nothing: say so instead.
      const alone = await validateGrammar(term);
      if ('lanes' in alone && alone.lanes.length === 0) {
        setError(`'${term}' matches no lane of this run (lanes g0–g${p.lanes.length - 1}${p.lanes.length ? `, nodes ${p.lanes[0]!.node} … ${p.lanes.at(-1)!.node}` : ''})`);
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

  function remove(i: number, n = 1) {
    const rest = terms.filter((_, j) => j < i || j >= i + n);
    setPick(null);
    p.onChange(rest.length ? rest.join(', ') : 'all');
  }

  async function quickPick(criterion: string, label: string, unit: string) {
    setBusy(true);
    try {
      const r = await getJson<OutliersAnswer>('timeline/outliers', { criterion, t0: p.vp.t0, t1: p.vp.t1, top_k: 8 });
      if (!r.outliers.length) {
        setError(`${label}: no lane has data for that in ${r.coverage ? 'the hours of this window read so far' : 'this window'}`);
        return;
      }
      setError(null);
      const grammar = r.outliers.map((o) => `gpu:${o.node}:${o.gpu}`).join(', ');
      setPick({ label, unit, outliers: r.outliers, grammar, noOutlier: noOutlierReason(criterion, r.outliers, unit), coverage: r.coverage });
      p.onChange(grammar);
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
        {terms.length === 0 && p.pending && (
          <span class="chip muted" data-testid="lanes-pending" title="the lane catalog is being read; a large cluster opens on a sample of its lanes">
            choosing lanes…
          </span>
        )}
        {terms.length === 0 && !p.pending && <span class="chip">all</span>}
        {defaultLead > 0 && (
          <span class="chip" title={defaultTerms.join(', ')} data-testid="default-lanes">
            {defaultTerms.length - p.lateCount} evenly spaced lanes{p.lateCount ? ` + ${p.lateCount} late starter${p.lateCount > 1 ? 's' : ''}` : ''} ({defaultTerms[0]} … {defaultTerms.at(-1)})
            <button aria-label="remove the default lanes" onClick={() => (p.grammar === null ? p.onChange('all') : remove(0, defaultLead))}>
              ×
            </button>
          </span>
        )}
        {terms.slice(defaultLead).map((t, k) => (
          <span class="chip" key={`${t}-${k}`} title={t}>
            {t}
            <button aria-label={`remove ${t}`} onClick={() => remove(defaultLead + k)}>
              ×
            </button>
          </span>
        ))}
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
        <button disabled={busy} onClick={() => quickPick('start_lag', 'late start', 's')} title="lanes by median lag: seconds after the median rank that a lane leaves train_wait (or starts actor_train), median over steps">
          late start
        </button>
        <button disabled={busy} onClick={() => quickPick('lowest_util', 'lowest util', '%')}>
          lowest util
        </button>
        <span class="seg">
          <button disabled={busy || absent} onClick={() => quickPick(`slowest_phase:${phase}`, `slowest ${phase}`, 's')}>
            slowest
          </button>
          <select aria-label="phase for the slowest pick" data-testid="slowest-phase" value={phase} onChange={(e) => setPhase((e.target as HTMLSelectElement).value)}>
            {phaseOptions.map((n) => (
              <option key={n} value={n}>
                {n}
                {absent && n === phase ? ' (absent here)' : ''}
              </option>
            ))}
          </select>
        </span>
        {absent && (
          <span class="muted" style={{ fontSize: '12px' }}>
            no {phase} in this window
          </span>
        )}
        {pick && (
          <span class="muted" style={{ fontSize: '12px' }} data-testid="pick-result">
            {pick.label}, worst first: {pickSummary(pick, indexOf)}
            {pick.noOutlier && <strong data-testid="no-outlier"> · no outlier: {pick.noOutlier}</strong>}
            {pick.coverage && <> · ranked over the hours read so far <CoverageNote coverage={pick.coverage} /></>}
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

/** `g3 12.5 % · g7 12.5 % (tie) · …`: each picked lane with its score, ties (equal scores, not equal texts) named. */
function pickSummary(pick: QuickPick, indexOf: Map<string, number>): string {
  const shown = pickTexts(pick.outliers.map((o) => o.score), pick.unit);
  return pick.outliers.map((o, i) => `g${indexOf.get(`${o.node}:${o.gpu}`) ?? '?'} ${shown[i]}`).join(' · ');
}
