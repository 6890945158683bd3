// `/api/rlsight/trace` (a dump's request traces laid out for the Trace view) and
// `/api/rlsight/trace/details` (one sample's items with every attr). A run without traces answers both with a
// 404 saying so, whatever the step (meta's `traces` tells the app beforehand).
import type { Hono } from 'hono';
import * as z from 'zod';
import { windowProblem } from '../queries/limits.ts';
import type { RunSources } from '../queries/runAnswers.ts';
import { BadArgument } from '../queries/limits.ts';
import { downloadName, utcNamePart } from './downloads.ts';
import { jsonByteLength, jsonResponse } from './json.ts';
import { boolParam, floatParam, intParam, parseParams } from './params.ts';
import { holdsNothing, nothingToExportText, PERFETTO_MAX_BYTES, tooBigToLoad } from '../queries/perfetto.ts';
import { perfettoForRun, perfettoSpan } from '../queries/perfettoExport.ts';
import { NotFound } from '../run/errors.ts';

const traceQuery = z.object({ rollout_id: intParam, eval: boolParam.default(false) });
const detailsQuery = z.object({ rollout_id: intParam, eval: boolParam.default(false), row: intParam });
const perfettoQuery = z.object({ t0: floatParam.optional(), t1: floatParam.optional(), lanes: z.string().optional(), rollout_id: intParam.optional(), eval: boolParam.default(false) });

export function mountTrace(app: Hono, run: RunSources): void {
  app.get('/api/rlsight/trace', async (c) => {
    const q = parseParams(traceQuery, c.req.query());
    return jsonResponse(c, await run.trace(q.rollout_id, q.eval));
  });
  app.get('/api/rlsight/trace/details', async (c) => {
    const q = parseParams(detailsQuery, c.req.query());
    return jsonResponse(c, await run.traceDetails(q.rollout_id, q.eval, q.row));
  });
  // The Perfetto download: one window (or one dump's traces) as Chrome trace-event JSON.
  app.get('/api/rlsight/export/perfetto', async (c) => {
    const q = parseParams(perfettoQuery, c.req.query());
    const problem = windowProblem(q.t0, q.t1);
    if (problem !== null) throw new BadArgument('t1', problem);
    const trace = await perfettoForRun(run, { t0: q.t0, t1: q.t1, lanes: q.lanes, rolloutId: q.rollout_id, evaluation: q.eval });
    // a window holding nothing is refused as the CLI refuses it, saying where to look (and which steps could not be read), not an empty file
    if (holdsNothing(trace)) {
      const leftOut = trace.otherData.skipped_steps ? `; left out: ${trace.otherData.skipped_steps}` : '';
      throw new NotFound(`${nothingToExportText({ t0: q.t0, t1: q.t1 }, await perfettoSpan(run), { t0: 't0', t1: 't1' })}${leftOut}`);
    }
    // refused above what Perfetto loads, as the CLI refuses it (a long run's whole history with every trace attr),
    // measured before anything is sent (nothing of the body is kept to measure it)
    const tooBig = tooBigToLoad(jsonByteLength(trace, PERFETTO_MAX_BYTES), 't0/t1');
    if (tooBig !== null) throw new BadArgument(q.t0 === undefined ? 't0' : 't1', tooBig);
    // the run, then the step or the window (UTC start and end; the whole run without either)
    const what =
      q.rollout_id !== undefined
        ? `${q.eval ? 'eval_' : ''}${q.rollout_id}`
        : q.t0 === undefined && q.t1 === undefined
          ? null
          : `${q.t0 === undefined ? 'start' : utcNamePart(q.t0)}-${q.t1 === undefined ? 'end' : utcNamePart(q.t1)}`;
    c.header('Content-Disposition', `attachment; filename="${downloadName(c, what === null ? 'perfetto.json' : `${what}.perfetto.json`)}"`);
    return jsonResponse(c, trace);
  });
}
