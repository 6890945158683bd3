// Reads the streamed search answer (newline-delimited JSON) as it arrives; aborting the signal cancels the scan.
import { ApiError } from '../../api.ts';
import { chosenRun, scopedPath } from '../../chosenRun.ts';
import type { SearchEvent } from '../../../src/wire/index.ts';

/** The search request of one run (`run`: its id, or null for the server's first run at the reference paths). */
export function searchUrl(q: string, limit: number, run: string | null): string {
  return `./api/${scopedPath('rlsight/search', run)}?${new URLSearchParams({ q, limit: String(limit) })}`;
}

/** Streams the search of `run` (the run the app shows unless given): the answer belongs to that run whatever is chosen meanwhile. */
export async function streamSearch(q: string, limit: number, onEvent: (e: SearchEvent) => void, signal: AbortSignal, run: string | null = chosenRun.get()): Promise<void> {
  const res = await fetch(searchUrl(q, limit, run), { signal, headers: { accept: 'application/x-ndjson' } });
  if (!res.ok) {
    let detail = res.statusText;
    try {
      detail = ((await res.json()) as { detail?: string }).detail ?? detail;
    } catch {
      /* not JSON */
    }
    throw new ApiError(res.status, detail, 'rlsight/search');
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.trim()) onEvent(JSON.parse(line) as SearchEvent);
    }
  }
}

/** The steps a finished search covered: all of them, or, stopped at its limit, the first ones it scanned. */
export function stepsSearched(truncated: boolean, scanned: number, total: number): string {
  const steps = (n: number) => `${n} step${n === 1 ? '' : 's'}`;
  return truncated && scanned < total ? `the first ${scanned} of ${steps(total)}` : steps(total);
}
