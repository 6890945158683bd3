// `/api/metrics` (scalar series per step), `/api/advisory` (run-health alarms and tuning advice, the
// reference's body) and `/api/rlsight/advisory` (the same advisories, each with the window and lanes it concerns).
import type { Hono } from 'hono';
import { z } from 'zod';
import { jsonResponse } from './json.ts';
import { ParamError, checkWindow, parseParams, windowShape } from './params.ts';
import type { RunSources } from './sources.ts';

const metricsQuery = z.object({ ...windowShape, keys: z.string(), x: z.string().default('rollout/step') });
const advisoryQuery = z.object(windowShape);

export function mountMetrics(app: Hono, run: RunSources, lowMfu: number): void {
  app.get('/api/metrics', async (c) => {
    // No window rule here (the reference has none): a reversed window is an empty answer.
    const q = parseParams(metricsQuery, c.req.query());
    const keys = q.keys.split(',').filter((k) => k !== '');
    if (keys.length === 0) throw new ParamError('keys', 'keys must be a non-empty comma-separated list');
    // A key listed twice is served twice over, as the reference does (pinned by its answers).
    return jsonResponse(c, await run.metrics({ keys, x: q.x, t0: q.t0, t1: q.t1 }));
  });

  app.get('/api/advisory', async (c) => {
    const q = parseParams(advisoryQuery, c.req.query());
    checkWindow(q.t0, q.t1);
    const { advisories, mfu } = await run.advisory({ t0: q.t0, t1: q.t1, lowMfu });
    return jsonResponse(c, { advisories: advisories.map(({ level, message }) => ({ level, message })), mfu });
  });

  app.get('/api/rlsight/advisory', async (c) => {
    const q = parseParams(advisoryQuery, c.req.query());
    checkWindow(q.t0, q.t1);
    const { advisories, mfu } = await run.advisory({ t0: q.t0, t1: q.t1, lowMfu });
    return jsonResponse(c, { advisories: advisories.map(({ level, message, window, lanes }) => ({ level, message, window, lanes })), mfu });
  });
}
