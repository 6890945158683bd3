// The header search box: results stream in as the server scans every step; `/` focuses it, ↑/↓ pick, Enter
// or a click opens the Sample view at the match, Esc closes. Typing again cancels the scan in flight.
// It is an ARIA 1.2 combobox: focus stays in the field while ↑/↓ move the active option, the options are not Tab
// stops (Tab leaves the widget in one step), and the results close once focus has left it.
// The results are those of the run the app shows: another run chosen in the header searches that run anew.
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText, getJson, isAbort } from '../../api.ts';
import { fmtNum } from '../../format.ts';
import { href, navigate, route } from '../../route.ts';
import { chosenRun } from '../../chosenRun.ts';
import { runList, shownRunId } from '../../runs.ts';
import { useStore } from '../../store.ts';
import type { SearchMatch, TokenView } from '../../../src/wire/index.ts';
import { stepsSearched, streamSearch } from './stream.ts';
import { findOfMatch } from '../sample/findTerms.ts';
import { openWithHeading } from '../../viewHeading.ts';

const LIMIT = 50;
const DEBOUNCE_MS = 160;

interface State {
  /** The run searched: its `run=` id, or null for the server's first run (the reference paths). */
  run: string | null;
  q: string;
  matches: SearchMatch[];
  scanned: number;
  total: number;
  done: { matches: number; truncated: boolean; ms: number; note: string | null; skipped: string[] } | null;
  error: string | null;
}

const EMPTY: State = { run: null, q: '', matches: [], scanned: 0, total: 0, done: null, error: null };

/**
 * Where a match of `query` opens: the tokens tab for response text, the conversation for recorded messages,
 * with what the query matched (its words and phrases, or its regular expression) to highlight there; in the run
 * searched (`run`; null: the server's first run), else the run the app shows.
 */
export function matchHref(m: SearchMatch, query?: string, run?: string | null): string {
  const tab = m.field === 'response' ? 'tokens' : m.field === 'prompt' || m.field === 'conversation' ? 'conversation' : undefined;
  const inRun = run === undefined ? {} : { run };
  return href(`/rollout/${m.step}/sample/${m.sample_index}`, { eval: m.evaluation, tab, find: findOfMatch(m, query), ...inRun });
}

/** The token position where a response hit starts: the first occurrence of its text in the decoded tokens. */
async function tokenOf(m: SearchMatch): Promise<number | null> {
  const t = await getJson<TokenView>(`rollout/${m.step}/sample/${m.sample_index}/tokens`, { eval: m.evaluation });
  if (!t.token_text) return null;
  const texts = t.token_text.slice(t.response_offset);
  const joined = texts.join('').toLowerCase();
  const at = joined.indexOf(m.match.toLowerCase());
  if (at < 0) return null;
  let chars = 0;
  for (let i = 0; i < texts.length; i++) {
    chars += texts[i].length;
    if (chars > at) return t.start + t.response_offset + i;
  }
  return null;
}

function Snippet({ m }: { m: SearchMatch }) {
  const parts: preact.JSX.Element[] = [];
  let at = 0;
  for (const [a, b] of m.highlights) {
    if (a < at) continue;
    parts.push(<>{m.snippet.slice(at, a)}</>, <mark>{m.snippet.slice(a, b)}</mark>);
    at = b;
  }
  parts.push(<>{m.snippet.slice(at)}</>);
  return <span class="snippet">{parts}</span>;
}

export function HeaderSearch() {
  const [text, setText] = useState('');
  const [open, setOpen] = useState(false);
  const [kept, setState] = useState<State>(EMPTY);
  // The run the header shows: the search is of it alone, and another one chosen searches again.
  const run = useStore(chosenRun);
  const runs = useStore(runList);
  const runName = runs && runs.length > 1 ? shownRunId(runs) : null;
  // (results of the run shown before never show, not even for the moment before the search of the new one starts)
  const state = kept.run === run ? kept : { ...EMPTY, run };
  const [sel, setSel] = useState(0);
  // Enter pressed before the results of the text in the box arrived: that text, whose first match opens when they do.
  const [waiting, setWaiting] = useState<string | null>(null);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const q = text.trim();
    if (!q) {
      setState({ ...EMPTY, run });
      return;
    }
    // Another run: the results shown go at once (the same run keeps them while the new text waits for its debounce).
    setState((s) => (s.run === run ? s : { ...EMPTY, run }));
    const ctrl = new AbortController();
    // Events of this search only: none after another text or run took its place (a burst parsed before the abort).
    let live = true;
    const update = (f: (s: State) => State) => live && setState((s) => (s.q === q && s.run === run ? f(s) : s));
    const timer = setTimeout(() => {
      setState({ ...EMPTY, run, q });
      setSel(0);
      let pending: SearchMatch[] = [];
      let frame = 0;
      // Matches arrive in bursts: render them once per frame.
      const flush = () => {
        frame = 0;
        const batch = pending;
        pending = [];
        update((s) => ({ ...s, matches: [...s.matches, ...batch] }));
      };
      streamSearch(
        text,
        LIMIT,
        (e) => {
          if (e.type === 'match') {
            pending.push(e);
            frame ||= requestAnimationFrame(flush);
          } else if (e.type === 'progress') update((s) => ({ ...s, scanned: e.steps_scanned, total: e.steps_total }));
          else if (e.type === 'done') {
            if (frame) cancelAnimationFrame(frame);
            flush();
            update((s) => ({ ...s, scanned: e.steps_scanned, total: e.steps_total, done: { matches: e.matches, truncated: e.truncated, ms: e.elapsed_ms, note: e.note ?? null, skipped: e.warnings } }));
          } else if (e.type === 'error') update((s) => ({ ...s, error: e.detail }));
        },
        ctrl.signal,
        run,
      ).catch((err) => {
        if (!isAbort(err)) update((s) => ({ ...s, error: errorText(err) }));
      });
    }, DEBOUNCE_MS);
    return () => {
      live = false;
      clearTimeout(timer);
      ctrl.abort();
    };
  }, [text, run]);

  // Another address (Back, a link, a typed URL) is another screen: the results belong to the one left.
  useEffect(
    () =>
      route.subscribe(() => {
        setOpen(false);
        setWaiting(null);
      }),
    [],
  );

  useEffect(() => {
    const away = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener('mousedown', away);
    return () => document.removeEventListener('mousedown', away);
  }, []);

  const go = (m: SearchMatch | undefined) => {
    if (!m) return;
    const q = state.q;
    setOpen(false);
    // Focus goes to the opened view's heading, where reading the match starts (not left on the page's body), once it
    // names the match (another sample in the Sample view keeps the view, so only the heading's text changes).
    const open = (to: string) => openWithHeading(to, navigate);
    const run = state.run;
    if (m.field !== 'response') return open(matchHref(m, q, run));
    // A response hit opens the tokens tab at the token where the hit starts.
    void tokenOf(m).then(
      (pos) => open(pos === null ? matchHref(m, q, run) : href(`/rollout/${m.step}/sample/${m.sample_index}`, { eval: m.evaluation, tab: 'tokens', start: Math.max(0, pos - 16), at: pos, run })),
      () => open(matchHref(m, q, run)),
    );
  };

  // The results Enter waits for have come: open their first match (none found, or an error: stop waiting).
  useEffect(() => {
    if (waiting === null || state.q !== waiting) return;
    if (state.matches.length > 0) {
      setWaiting(null);
      go(state.matches[0]);
    } else if (state.done || state.error) setWaiting(null);
  }, [state, waiting]);

  const shown = open && text.trim() !== '';
  // The active option is scrolled into the panel's view: focus stays in the field, so nothing else would show it.
  useEffect(() => {
    if (shown) document.getElementById(`search-opt-${sel}`)?.scrollIntoView({ block: 'nearest' });
  }, [sel, shown]);
  const onKey = (e: KeyboardEvent) => {
    // closed (Esc): ↓, ↑ or Enter shows the results again first, never opening a match the reader cannot see
    if (!shown && (e.key === 'ArrowDown' || e.key === 'ArrowUp' || e.key === 'Enter') && (e.currentTarget as HTMLInputElement).value.trim() !== '') {
      e.preventDefault();
      setOpen(true);
      return;
    }
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      setSel((i) => Math.min(i + 1, state.matches.length - 1));
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setSel((i) => Math.max(i - 1, 0));
    } else if (e.key === 'Enter') {
      // The results shown may still be an older query's (the new one waits for its debounce): never open those.
      const q = (e.currentTarget as HTMLInputElement).value.trim();
      if (q && state.q === q && state.matches.length > 0) go(state.matches[sel]);
      else if (q && !(state.q === q && (state.done || state.error))) setWaiting(q);
    } else if (e.key === 'Escape') {
      // The first Esc closes the results and keeps the text; with them closed, the search field's own Esc clears it.
      if (shown) e.preventDefault();
      setOpen(false);
      setWaiting(null);
    }
  };

  const busy = state.q !== '' && !state.done && !state.error;
  const active = shown && sel < state.matches.length ? `search-opt-${sel}` : undefined;
  // Several runs served: the status names the run searched.
  const ofRun = runName === null ? '' : `${runName}: `;
  return (
    <div
      class="header-search"
      ref={box}
      onFocusOut={(e) => {
        // Focus gone elsewhere (Tab, a click outside): the results would cover what it went to.
        if (!box.current?.contains(e.relatedTarget as Node | null)) setOpen(false);
      }}
    >
      <input
        type="search"
        role="combobox"
        // Preact's types ask a combobox input for a datalist; its list is the results panel, named by aria-controls.
        list={undefined}
        aria-expanded={shown}
        aria-controls="search-results"
        aria-autocomplete="list"
        aria-activedescendant={active}
        data-global-search
        placeholder="search all steps  ( / )"
        aria-label={runName === null ? 'search every sample of the run' : `search every sample of run ${runName}`}
        value={text}
        onInput={(e) => {
          setText((e.target as HTMLInputElement).value);
          setOpen(true);
          setWaiting(null);
        }}
        onFocus={() => setOpen(true)}
        onKeyDown={onKey}
      />
      {shown && (
        // tabIndex −1: a scrolling box Chromium would otherwise make a Tab stop of (the options are reached by ↑/↓)
        <div class="search-results" tabIndex={-1} data-query={state.q} data-run={runName ?? undefined} data-done={state.done ? '1' : undefined}>
          <div class="search-status" role="status">
            {state.error
              ? state.error
              : busy
                ? `${ofRun}scanning step ${state.scanned}/${state.total || '…'} — ${state.matches.length} match${state.matches.length === 1 ? '' : 'es'} so far`
                : state.done
                  ? `${ofRun}${state.done.matches}${state.done.truncated ? '+' : ''} match${state.done.matches === 1 ? '' : 'es'} in ${stepsSearched(state.done.truncated, state.scanned, state.total)} (${state.done.ms} ms)`
                  : ''}
            {!state.error && !busy && state.done?.note && (
              <div class="search-note" data-testid="search-note">
                {state.done.note}
              </div>
            )}
            {!state.error && !busy && (state.done?.skipped.length ?? 0) > 0 && (
              <div class="search-note" data-testid="search-skipped">
                not searched: {state.done!.skipped.join('; ')}
              </div>
            )}
          </div>
          <div role="listbox" id="search-results" aria-label="search results">
            {state.matches.map((m, i) => (
              <a
                id={`search-opt-${i}`}
                class={`search-result${i === sel ? ' selected' : ''}`}
                role="option"
                aria-selected={i === sel}
                tabIndex={-1}
                href={matchHref(m, state.q, state.run)}
                onClick={(e) => {
                  e.preventDefault();
                  go(m);
                }}
                onMouseEnter={() => setSel(i)}
              >
                <span class="where">
                  {m.evaluation ? 'eval ' : ''}step {m.step} · sample {m.sample_index}
                </span>
                <span class="facts">
                  reward {fmtNum(m.reward)} · {m.status} · {m.field}
                </span>
                <Snippet m={m} />
              </a>
            ))}
          </div>
        </div>
      )}
    </div>
  );
}
