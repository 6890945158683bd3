// `/api/metrics` (scalar series per step), `/api/advisory` (run-health alarms and tuning advice, the
// reference's body) and `/api/rlsight/advisory` (the same advisories, each with the window and lanes it concerns).
import type { Hono } from 'hono';
import * as z from 'zod';
import { metricKeyList } from '../queries/metrics.ts';
import { scrubPaths } from './errors.ts';
import { jsonResponse, markPartial, withWarnings } from './json.ts';
import type { AdvisoryAnswer } from '../wire/index.ts';
import { boolParam, parseParams, timelineWindow, windowShape } from './params.ts';
import type { RunSources } from '../queries/runAnswers.ts';
import { answerSignal } from './sharedAnswers.ts';

// `progressive`: rlsight's own; `dump/*` series at once over the steps read so far (the reference's clients get complete answers).
const metricsQuery = z.object({ ...windowShape, keys: z.string(), x: z.string().default('rollout/step'), progressive: boolParam.default(false) });
const advisoryQuery = timelineWindow(z.object(windowShape));

export function mountMetrics(app: Hono, run: RunSources, lowMfu: number): void {
  app.get('/api/metrics', async (c) => {
    // No window rule here (the reference has none): a reversed window is an empty answer.
    const q = parseParams(metricsQuery, c.req.query());
    const keys = metricKeyList(q.keys);
    // A key listed twice is served twice over, as the reference does (pinned by its answers).
    const answer = await run.metrics({ keys, x: q.x, t0: q.t0, t1: q.t1, progressive: q.progressive });
    markPartial(c, Object.values(answer).find((series) => series.coverage !== undefined)?.coverage);
    return jsonResponse(c, withWarnings(answer, run.warnings(), (m) => scrubPaths(m, run.roots)));
  });

  app.get('/api/advisory', async (c) => {
    const q = parseParams(advisoryQuery, c.req.query());
    const { advisories, mfu, coverage } = await run.advisory({ t0: q.t0, t1: q.t1, lowMfu, signal: answerSignal(c) });
    markPartial(c, coverage);
    const body: AdvisoryAnswer = { advisories: advisories.map(({ level, message }) => ({ level, message })), mfu, ...(coverage ? { coverage } : {}) };
    return jsonResponse(c, withWarnings(body, run.warnings(), (m) => scrubPaths(m, run.roots)));
  });

  app.get('/api/rlsight/advisory', async (c) => {
    const q = parseParams(advisoryQuery, c.req.query());
    const { advisories, mfu, coverage } = await run.advisory({ t0: q.t0, t1: q.t1, lowMfu, signal: answerSignal(c) });
    markPartial(c, coverage);
    const body = { advisories: advisories.map(({ level, message, window, lanes }) => ({ level, message, window, lanes })), mfu, ...(coverage ? { coverage } : {}) };
    return jsonResponse(c, withWarnings(body, run.warnings(), (m) => scrubPaths(m, run.roots)));
  });
}
