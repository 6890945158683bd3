// Download links for the server's exports (`/api/rlsight/export/…`): the browser saves the file the server names
// (after the run's id). On a server holding several runs the links name the run they export, which is the run
// shown, whatever runs a view compares.
import { apiUrl, type Params } from '../api.ts';
import { runList, shownRunId } from '../runs.ts';
import { useStore } from '../store.ts';

export function Downloads({ what, path, formats, params = {} }: { what: string; path: string; formats: string[]; params?: Params }) {
  const runs = useStore(runList);
  const run = runs && runs.length > 1 ? shownRunId(runs) : null;
  return (
    <span class="downloads" aria-label={`download ${what}${run === null ? '' : ` of ${run}`}`}>
      ⤓ {what}
      {run !== null && (
        <>
          {' '}
          of <span data-testid="download-run">{run}</span>
        </>
      )}
      :{' '}
      {formats.map((f, i) => (
        <>
          {i > 0 && ' · '}
          <a href={apiUrl(path, formats.length > 1 ? { ...params, format: f } : params)} download data-download={f}>
            {f.toUpperCase()}
          </a>
        </>
      ))}
    </span>
  );
}
