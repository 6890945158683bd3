// A run as the app names it everywhere: its id (what the header, the runs table and `run=` URLs use), with its
// meta.json name beside it, muted, when that differs. `runLabel` is the same name as plain text (legends, CSV
// columns, select options), so the two always read alike.
import type { RunListing } from '../../src/wire/index.ts';
import { runLabel } from '../runs.ts';

export function RunName({ run }: { run: Pick<RunListing, 'id' | 'name'> }) {
  if (runLabel(run) === run.id) return <>{run.id}</>;
  return (
    <>
      {run.id}
      <span class="run-label">{runLabel(run).slice(run.id.length)}</span>
    </>
  );
}
