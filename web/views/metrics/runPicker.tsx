// The run picker: one checkbox per served run, in its colour; the choice is kept in the URL (`runs=`). The run the
// header shows is always drawn: its box stays ticked, and choosing another run in the header leaves it out.
import type { RunListing } from '../../../src/wire/index.ts';
import { fmtWall } from '../../format.ts';
import { setParams } from '../../route.ts';
import { runColor, runLabel } from '../../runs.ts';
import { RunName } from '../../components/runName.tsx';
import { hoveredRun } from './chartPanel.tsx';

export function RunPicker({ runs, chosen, shown }: { runs: readonly RunListing[]; chosen: readonly RunListing[]; shown: string | null }) {
  const ids = new Set(chosen.map((r) => r.id));
  const toggle = (id: string) => {
    const next = new Set(ids);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    // At least one run is always shown; the list order is kept in the URL.
    if (next.size === 0) return;
    setParams({ runs: runs.filter((r) => next.has(r.id)).map((r) => r.id).join(','), zx: null });
  };
  return (
    <fieldset class="run-picker" data-testid="run-picker">
      <legend>runs</legend>
      {runs.map((r) => (
        <label
          key={r.id}
          onMouseEnter={() => hoveredRun.set(runLabel(r))}
          onMouseLeave={() => hoveredRun.set(null)}
          title={`${r.gpus === null ? '' : `${r.gpus} GPUs · `}${r.steps} steps${r.start_ts !== null ? ` · started ${fmtWall(r.start_ts)}` : ''}${r.id === shown ? ' · the run the header shows, always drawn (choose another there to leave it out)' : ''}`}
        >
          <input type="checkbox" checked={ids.has(r.id)} disabled={r.id === shown && ids.has(r.id)} onChange={() => toggle(r.id)} data-run={r.id} />
          <span class="swatch" style={{ background: runColor(runs, r.id) }} />
          <span class="run-picker-name">
            <RunName run={r} />
          </span>
        </label>
      ))}
    </fieldset>
  );
}
