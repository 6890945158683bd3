// Download links for the server's exports (`/api/rlsight/export/…`): the browser saves the file the server names.
import { apiUrl, type Params } from '../api.ts';

export function Downloads({ what, path, formats, params = {} }: { what: string; path: string; formats: string[]; params?: Params }) {
  return (
    <span class="downloads" aria-label={`download ${what}`}>
      ⤓ {what}:{' '}
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
