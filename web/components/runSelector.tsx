// The header's run choice: a button naming the shown run that opens the list of served runs (none when the
// server holds one run). Only the chosen run's name is on screen until the list is opened.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { RunListing } from '../../src/wire/index.ts';
import { href, routePath, route } from '../route.ts';
import { runColor } from '../runs.ts';

/** Switches the whole app to `id`, keeping the current screen (a new history entry, so Back returns). */
export function chooseRun(id: string): void {
  const r = route.get();
  const p = new URLSearchParams(r.params);
  p.set('run', id);
  location.hash = href(routePath(r), p).replace(/^#/, '');
}

export function RunSelector({ runs, chosen }: { runs: readonly RunListing[]; chosen: string }) {
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (e: Event) => !box.current?.contains(e.target as Node) && setOpen(false);
    const esc = (e: KeyboardEvent) => e.key === 'Escape' && setOpen(false);
    document.addEventListener('pointerdown', close);
    document.addEventListener('keydown', esc);
    return () => {
      document.removeEventListener('pointerdown', close);
      document.removeEventListener('keydown', esc);
    };
  }, [open]);
  const shown = runs.find((r) => r.id === chosen);
  return (
    <span class="run-select" ref={box}>
      <button
        type="button"
        class="run-name"
        data-testid="run-selector"
        data-run={chosen}
        aria-haspopup="listbox"
        aria-expanded={open}
        title={`run ${chosen}${shown && shown.name !== chosen ? ` (${shown.name})` : ''}: the run every view shows, kept in the URL as run=`}
        onClick={() => setOpen(!open)}
      >
        {shown && <span class="swatch" style={{ background: runColor(runs, chosen) }} />}
        {chosen} ▾
      </button>
      {open && (
        <ul class="run-options" role="listbox" aria-label="runs">
          {runs.map((r) => (
            <li
              role="option"
              aria-selected={r.id === chosen}
              data-run={r.id}
              onClick={() => {
                setOpen(false);
                if (r.id !== chosen) chooseRun(r.id);
              }}
            >
              <span class="swatch" style={{ background: runColor(runs, r.id) }} />
              {r.id}
              {r.name !== r.id && <span class="run-label"> {r.name}</span>}
            </li>
          ))}
          <li class="run-options-all">
            <a href={href('/runs')} onClick={() => setOpen(false)}>
              all runs (table) →
            </a>
          </li>
        </ul>
      )}
    </span>
  );
}

/** The message for a `run=` the server does not hold: it names the runs it does. */
export function unknownRunText(id: string, runs: readonly RunListing[]): string {
  return `No run named “${id}” is served here; the runs are: ${runs.map((r) => r.id).join(', ')}. Pick one in the header or open the runs table.`;
}
