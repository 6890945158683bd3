// `/api/timeline/*` (and rlsight's `/api/rlsight/lanes`): topology, phases, GPU and engine series, heatmap, fleet, outliers, bubbles.
import type { Hono } from 'hono';
import * as z from 'zod';
import { FLEET_X_BUCKETS, HEATMAP_X_BUCKETS, OUTLIER_TOP_K, SERIES_MAX_POINTS } from '../queries/limits.ts';
import type { RunSources } from '../queries/runAnswers.ts';
import { answerPool, gpuColumnsResponse, typedJsonResponse } from './answerPool.ts';
import { columnsResponse, engineSeriesFrame, phasesFrame, wantsColumns } from './columns.ts';
import { scrubPaths } from './errors.ts';
import { jsonResponse, markPartial, withWarnings } from './json.ts';
import { boolParam, intParam, limitedInt, parseParams, timelineWindow, windowShape } from './params.ts';
import { answerSignal } from './sharedAnswers.ts';

const lanes = z.string().optional();
const phasesQuery = timelineWindow(z.object({ ...windowShape, lanes }));
const gpuQuery = timelineWindow(z.object({ ...windowShape, lanes, max_points: limitedInt(SERIES_MAX_POINTS) }));
const heatmapQuery = timelineWindow(
  z.object({ ...windowShape, lanes, metric: z.string().default('util'), x_buckets: limitedInt(HEATMAP_X_BUCKETS), max_rows: intParam.optional() }),
);
const fleetQuery = timelineWindow(z.object({ ...windowShape, x_buckets: limitedInt(FLEET_X_BUCKETS) }));
// No window rule here: the reference answers a reversed window with an empty list.
const outliersQuery = z.object({ ...windowShape, criterion: z.string(), top_k: limitedInt(OUTLIER_TOP_K) });
const engineQuery = timelineWindow(
  z.object({
    ...windowShape,
    metric: z.string(),
    max_points: limitedInt(SERIES_MAX_POINTS),
    per_dp_rank: boolParam.default(false),
  }),
);

export function mountTimeline(app: Hono, run: RunSources): void {
  app.get('/api/timeline/topology', async (c) => jsonResponse(c, await run.topology()));

  // rlsight's own: resolves a lane selection (400 naming `lanes` when it does not parse), whatever has data.
  app.get('/api/rlsight/lanes', async (c) => {
    const q = parseParams(z.object({ lanes }), c.req.query());
    return jsonResponse(c, await run.selectLanes(q.lanes));
  });

  app.get('/api/timeline/phases', async (c) => {
    const q = parseParams(phasesQuery, c.req.query());
    const columns = wantsColumns(c);
    const answer = await run.phases({ ...q, signal: answerSignal(c) });
    return columns ? columnsResponse(c, phasesFrame(answer)) : jsonResponse(c, answer);
  });

  app.get('/api/timeline/gpu', async (c) => {
    const q = parseParams(gpuQuery, c.req.query());
    const columns = wantsColumns(c);
    const signal = answerSignal(c);
    // the series of many lanes are encoded on a thread: it gets ready while they are read
    answerPool.prepare();
    const answer = await run.gpu({ t0: q.t0, t1: q.t1, lanes: q.lanes, maxPoints: q.max_points, signal });
    // all lanes of an hour is tens of MB of text: written on an encoding thread
    return columns ? gpuColumnsResponse(c, answer, signal) : typedJsonResponse(c, answer, signal);
  });

  app.get('/api/timeline/gpu_processes', async (c) => {
    const q = parseParams(phasesQuery, c.req.query());
    return jsonResponse(c, await run.gpuProcesses(q));
  });

  app.get('/api/timeline/heatmap', async (c) => {
    const q = parseParams(heatmapQuery, c.req.query());
    const { frame, coverage } = await run.heatmap({ t0: q.t0, t1: q.t1, lanes: q.lanes, metric: q.metric, xBuckets: q.x_buckets, maxRows: q.max_rows });
    markPartial(c, coverage);
    return c.body(frame as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': 'application/octet-stream' });
  });

  app.get('/api/timeline/fleet', async (c) => {
    const q = parseParams(fleetQuery, c.req.query());
    const answer = await run.fleet({ t0: q.t0, t1: q.t1, xBuckets: q.x_buckets });
    markPartial(c, answer.coverage);
    return jsonResponse(c, withWarnings(answer, run.warnings(), (m) => scrubPaths(m, run.roots)));
  });

  app.get('/api/timeline/outliers', async (c) => {
    const q = parseParams(outliersQuery, c.req.query());
    const answer = await run.outliers({ t0: q.t0, t1: q.t1, criterion: q.criterion, topK: q.top_k });
    markPartial(c, answer.coverage);
    return jsonResponse(c, answer);
  });

  app.get('/api/timeline/engine_series', async (c) => {
    const q = parseParams(engineQuery, c.req.query());
    const columns = wantsColumns(c);
    const answer = await run.engineSeries({ t0: q.t0, t1: q.t1, metric: q.metric, maxPoints: q.max_points, perDpRank: q.per_dp_rank });
    markPartial(c, answer.coverage);
    return columns ? columnsResponse(c, engineSeriesFrame(answer)) : jsonResponse(c, answer);
  });

  app.get('/api/timeline/bubbles', async (c) => jsonResponse(c, await run.bubbles()));
}
