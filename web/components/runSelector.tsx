// The header's run choice: a button naming the shown run that opens the list of served runs (none when the
// server holds one run). Only the chosen run's name is on screen until the list is opened. The list is a
// listbox that works from the keyboard as well as the mouse: Enter, Space or ↓/↑ on the button open it on the
// chosen run, ↑/↓/Home/End (or a run's first letter) move, Enter or Space chooses, Esc closes; focus returns
// to the button.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { RunListing } from '../../src/wire/index.ts';
import { href, routePath, route } from '../route.ts';
import { runColor, runLabel } from '../runs.ts';
import { RunName } from './runName.tsx';

/**
 * Switches the whole app to `id`, keeping the current screen (a new history entry, so Back returns). On a diff
 * the header names side A's run, so choosing a run there changes side A.
 */
export function chooseRun(id: string): void {
  const r = route.get();
  const p = new URLSearchParams(r.params);
  p.set('run', id);
  if ((r.view === 'diff' || r.view === 'sample-diff') && p.has('run_a')) p.set('run_a', id);
  location.hash = href(routePath(r), p).replace(/^#/, '');
}

let instances = 0;

export function RunSelector({ runs, chosen }: { runs: readonly RunListing[]; chosen: string }) {
  const [open, setOpen] = useState(false);
  /** The option the keyboard is on (aria-activedescendant), by its place in `runs`. */
  const [active, setActive] = useState(0);
  const [uid] = useState(() => `run-options-${++instances}`);
  const box = useRef<HTMLSpanElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const list = useRef<HTMLUListElement>(null);
  const chosenAt = Math.max(0, runs.findIndex((r) => r.id === chosen));

  const show = (at: number) => {
    setActive(Math.min(runs.length - 1, Math.max(0, at)));
    setOpen(true);
  };
  const close = (refocus: boolean) => {
    setOpen(false);
    if (refocus) button.current?.focus();
  };
  const pick = (id: string) => {
    close(true);
    if (id !== chosen) chooseRun(id);
  };

  // A pointer outside closes the list (focus stays where the pointer put it).
  useEffect(() => {
    if (!open) return;
    const outside = (e: Event) => !box.current?.contains(e.target as Node) && setOpen(false);
    document.addEventListener('pointerdown', outside);
    return () => document.removeEventListener('pointerdown', outside);
  }, [open]);
  // The opened list takes the focus, so its keys are its own; the active option stays in view.
  useLayoutEffect(() => {
    if (open) list.current?.focus({ preventScroll: true });
  }, [open]);
  useEffect(() => {
    if (open) list.current?.querySelector(`#${uid}-${active}`)?.scrollIntoView?.({ block: 'nearest' });
  }, [open, active]);

  const onButtonKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      e.stopPropagation();
      show(chosenAt);
    }
  };
  const onListKey = (e: KeyboardEvent) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const last = runs.length - 1;
    let handled = true;
    if (e.key === 'ArrowDown') setActive(Math.min(last, active + 1));
    else if (e.key === 'ArrowUp') setActive(Math.max(0, active - 1));
    else if (e.key === 'Home' || e.key === 'PageUp') setActive(0);
    else if (e.key === 'End' || e.key === 'PageDown') setActive(last);
    else if (e.key === 'Enter' || e.key === ' ') pick(runs[active]!.id);
    else if (e.key === 'Escape') close(true);
    else if (e.key === 'Tab') {
      // Tab leaves the list for the next control, as from the button.
      setOpen(false);
      handled = false;
    } else if (e.key.length === 1) {
      // A letter goes to the next run whose id starts with it.
      const k = e.key.toLowerCase();
      const order = runs.map((_, i) => (active + 1 + i) % runs.length);
      const at = order.find((i) => runs[i]!.id.toLowerCase().startsWith(k));
      if (at !== undefined) setActive(at);
    } else handled = false;
    if (handled) {
      e.preventDefault();
      // the app's own keys (j/k, Esc = reset, `/` = search) are not meant while choosing a run
      e.stopPropagation();
    }
  };

  const shown = runs.find((r) => r.id === chosen);
  return (
    <span class="run-select" ref={box}>
      <button
        type="button"
        class="run-name"
        ref={button}
        data-testid="run-selector"
        data-run={chosen}
        aria-haspopup="listbox"
        aria-expanded={open}
        aria-controls={open ? uid : undefined}
        aria-label={`run: ${runLabel(shown ?? { id: chosen, name: chosen })}, choose another`}
        title={`run ${runLabel(shown ?? { id: chosen, name: chosen })}${shown?.folder !== undefined && shown.folder !== chosen ? `, folder ${shown.folder}` : ''}: the run every view shows, kept in the URL as run=`}
        onClick={() => (open ? close(false) : show(chosenAt))}
        onKeyDown={onButtonKey}
      >
        {shown && <span class="swatch" style={{ background: runColor(runs, chosen) }} />}
        {chosen} ▾
      </button>
      {open && (
        <div class="run-options">
          <ul
            role="listbox"
            id={uid}
            ref={list}
            tabIndex={-1}
            aria-label="runs"
            aria-activedescendant={`${uid}-${active}`}
            onKeyDown={onListKey}
            onBlur={(e) => {
              // focus gone elsewhere (not to the "all runs" link beside the list): the list closes
              const to = e.relatedTarget as Node | null;
              if (to && !box.current?.contains(to)) setOpen(false);
            }}
          >
            {runs.map((r, i) => (
              <li
                role="option"
                id={`${uid}-${i}`}
                class={i === active ? 'active' : undefined}
                aria-selected={r.id === chosen}
                data-run={r.id}
                onPointerMove={() => i !== active && setActive(i)}
                onClick={() => pick(r.id)}
              >
                <span class="swatch" style={{ background: runColor(runs, r.id) }} />
                <RunName run={r} />
                {r.folder !== undefined && r.folder !== r.id && (
                  <span class="run-folder" data-testid="run-folder">
                    {r.folder}
                  </span>
                )}
              </li>
            ))}
          </ul>
          <div class="run-options-all">
            <a href={href('/runs')} onClick={() => setOpen(false)}>
              all runs (table) →
            </a>
          </div>
        </div>
      )}
    </span>
  );
}

/** The message for a `run=` the server does not hold: it names the runs it does. */
export function unknownRunText(id: string, runs: readonly RunListing[]): string {
  return `No run named “${id}” is served here; the runs are: ${runs.map((r) => r.id).join(', ')}. Pick one in the header or open the runs table.`;
}
