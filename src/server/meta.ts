// `/api/meta`: the run catalog and what the app may show.
import type { Hono } from 'hono';
import type { RunSources } from '../queries/runAnswers.ts';
import { scrubPaths } from './errors.ts';
import { jsonResponse, markPartial, withWarnings } from './json.ts';

export function mountMeta(app: Hono, run: RunSources, opts: { follow: boolean; useUtilizationOverview: boolean }): void {
  // The damage found so far is listed here too, so the app can show it (a banner) from its first answer.
  // At once: a slime or collected run's steps not read yet are read in the background (see `coverage`).
  app.get('/api/meta', async (c) => {
    const meta = await run.meta({ ...opts, progressive: true });
    markPartial(c, meta.coverage);
    return jsonResponse(c, withWarnings(meta, run.warnings(), (m) => scrubPaths(m, run.roots)));
  });
}
