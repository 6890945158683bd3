// The header's run choice: one `<select>` over the served runs (none when the server holds one run).
import type { RunListing } from '../../src/wire/index.ts';
import { href, routePath, route } from '../route.ts';

/** Switches the whole app to `id`, keeping the current screen (a new history entry, so Back returns). */
export function chooseRun(id: string): void {
  const r = route.get();
  const p = new URLSearchParams(r.params);
  p.set('run', id);
  location.hash = href(routePath(r), p).replace(/^#/, '');
}

export function RunSelector({ runs, chosen }: { runs: readonly RunListing[]; chosen: string }) {
  return (
    <label class="run-select" title="the run every view shows (kept in the URL as run=)">
      <span class="sr-only">run</span>
      <select aria-label="run" value={chosen} onChange={(e) => chooseRun((e.currentTarget as HTMLSelectElement).value)}>
        {runs.map((r) => (
          <option value={r.id}>{r.name === r.id ? r.id : `${r.id} · ${r.name}`}</option>
        ))}
      </select>
    </label>
  );
}

/** The message for a `run=` the server does not hold: it names the runs it does. */
export function unknownRunText(id: string, runs: readonly RunListing[]): string {
  return `No run named “${id}” is served here; the runs are: ${runs.map((r) => r.id).join(', ')}. Pick one in the header or open the runs table.`;
}
