// rlsight's answers no single chart gives: `/api/rlsight/health`, the export downloads
// (`/api/rlsight/export/{metrics,rollout/{id},sample/{id}/{index}}`), search and the diffs.
import type { Context, Hono } from 'hono';
import { stream } from 'hono/streaming';
import { z } from 'zod';
import type { AnswerRun } from '../queries/answerRun.ts';
import { encodeTable, rolloutTable, runMetricsTable, sampleDocument, tableFormat, type TableFormat } from '../queries/exports.ts';
import { DEFAULT_SIGNALS, runHealth, type SignalSpec } from '../queries/health.ts';
import { SEARCH_RESULTS } from '../queries/limits.ts';
import { parseQuery, RunSearch, searchRun } from '../queries/search.ts';
import { bestAndWorst, diffSide, sampleDiff, stepDiff } from '../queries/stepDiff.ts';
import { BadArgument } from '../run/errors.ts';
import { classify, scrubPaths } from './errors.ts';
import { jsonResponse } from './json.ts';
import { boolParam, intParam, limitedInt, parseParams } from './params.ts';

export interface AnswerOptions {
  /** Health thresholds (`--health-config`). */
  healthSignals?: readonly SignalSpec[];
  /** Absolute directories whose paths must never appear in an answer. */
  roots?: readonly string[];
}

const formatQuery = z.object({ format: z.string().optional() });
const rolloutPath = z.object({ rollout_id: intParam });
const samplePath = z.object({ rollout_id: intParam, sample_index: intParam });
const rolloutQuery = z.object({ format: z.string().optional(), eval: boolParam.default(false) });
const evalQuery = z.object({ eval: boolParam.default(false) });
const stepDiffQuery = z.object({ a: intParam, b: intParam, eval_a: boolParam.default(false), eval_b: boolParam.default(false) });
const sampleRef = z
  .string()
  .regex(/^\d+:\d+$/, 'expected STEP:SAMPLE, e.g. 3:17')
  .transform((s) => s.split(':').map(Number) as [number, number]);
const sampleDiffQuery = z.object({
  a: sampleRef.optional(),
  b: sampleRef.optional(),
  step: intParam.optional(),
  group: intParam.optional(),
  eval: boolParam.default(false),
});
const searchQuery = z.object({ q: z.string(), limit: limitedInt(SEARCH_RESULTS) });

const CONTENT_TYPES: Record<TableFormat, string> = { csv: 'text/csv; charset=utf-8', parquet: 'application/vnd.apache.parquet' };

function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80) || 'run';
}

function download(c: Context, bytes: Uint8Array, type: string, filename: string): Response {
  return c.body(bytes as unknown as ArrayBuffer, 200, {
    'content-type': type,
    'content-disposition': `attachment; filename="${filename}"`,
  });
}

export function mountAnswers(app: Hono, run: AnswerRun, opts: AnswerOptions = {}): void {
  const signals = opts.healthSignals ?? DEFAULT_SIGNALS;

  const search = new RunSearch(run);
  // Matches stream as newline-delimited JSON while the steps are scanned; closing the request stops the scan.
  app.get('/api/rlsight/search', async (c) => {
    const q = parseParams(searchQuery, c.req.query());
    parseQuery(q.q);
    c.header('content-type', 'application/x-ndjson; charset=utf-8');
    c.header('cache-control', 'no-store, no-transform');
    return stream(c, async (out) => {
      const ctrl = new AbortController();
      out.onAbort(() => ctrl.abort());
      try {
        for await (const e of searchRun(search, run, q.q, { limit: q.limit, signal: ctrl.signal })) {
          if (ctrl.signal.aborted) break;
          await out.write(`${JSON.stringify(e)}\n`);
        }
      } catch (err) {
        // Headers are sent: a failure mid-scan is the stream's last line.
        const failure = classify(err);
        if (!failure) console.error('rlsight: search:', err);
        await out.write(`${JSON.stringify({ type: 'error', detail: scrubPaths(failure?.detail ?? 'internal error', opts.roots ?? []) })}\n`);
      }
    });
  });

  app.get('/api/rlsight/diff/steps', async (c) => {
    const q = parseParams(stepDiffQuery, c.req.query());
    const a = await diffSide(run, q.a, q.eval_a);
    const b = await diffSide(run, q.b, q.eval_b);
    return jsonResponse(c, stepDiff(a, b));
  });

  // Two samples (`a`, `b` as STEP:SAMPLE), or a group's best and worst (`step`, `group`).
  app.get('/api/rlsight/diff/samples', async (c) => {
    const q = parseParams(sampleDiffQuery, c.req.query());
    let a: [number, number];
    let b: [number, number];
    if (q.a && q.b) [a, b] = [q.a, q.b];
    else if (q.step !== undefined && q.group !== undefined) {
      const [best, worst] = bestAndWorst((await run.summary(q.step, q.eval)).rows, q.group);
      [a, b] = [
        [q.step, best],
        [q.step, worst],
      ];
    } else throw new BadArgument(q.a || q.b ? 'b' : 'a', 'give a and b (STEP:SAMPLE each), or step and group');
    return jsonResponse(
      c,
      await sampleDiff({ run, step: a[0], sampleIndex: a[1], evaluation: q.eval }, { run, step: b[0], sampleIndex: b[1], evaluation: q.eval }),
    );
  });

  app.get('/api/rlsight/health', async (c) => jsonResponse(c, await runHealth(run, signals)));

  app.get('/api/rlsight/export/metrics', async (c) => {
    const format = tableFormat(parseParams(formatQuery, c.req.query()).format);
    const bytes = encodeTable(await runMetricsTable(run), format);
    return download(c, bytes, CONTENT_TYPES[format], `${safeName(run.name)}.metrics.${format}`);
  });

  app.get('/api/rlsight/export/rollout/:rollout_id', async (c) => {
    const { rollout_id: step } = parseParams(rolloutPath, c.req.param());
    const q = parseParams(rolloutQuery, c.req.query());
    const format = tableFormat(q.format);
    const bytes = encodeTable(await rolloutTable(run, step, q.eval), format);
    return download(c, bytes, CONTENT_TYPES[format], `${safeName(run.name)}.${q.eval ? 'eval_' : ''}${step}.rollout.${format}`);
  });

  app.get('/api/rlsight/export/sample/:rollout_id/:sample_index', async (c) => {
    const { rollout_id: step, sample_index: idx } = parseParams(samplePath, c.req.param());
    const q = parseParams(evalQuery, c.req.query());
    const doc = await sampleDocument(run, step, idx, q.eval);
    c.header('content-disposition', `attachment; filename="${safeName(run.name)}.${q.eval ? 'eval_' : ''}${step}.sample_${idx}.json"`);
    return jsonResponse(c, doc);
  });
}
