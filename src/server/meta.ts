// `/api/meta`: the run catalog and what the app may show.
import type { Hono } from 'hono';
import type { RunSources } from '../queries/runAnswers.ts';
import { jsonResponse } from './json.ts';

export function mountMeta(app: Hono, run: RunSources, opts: { follow: boolean; useUtilizationOverview: boolean }): void {
  app.get('/api/meta', async (c) => jsonResponse(c, await run.meta(opts)));
}
