// rlsight's answers no single chart gives: `/api/rlsight/health`, the export downloads
// (`/api/rlsight/export/{metrics,rollout/{id},sample/{id}/{index}}`), search and the diffs.
import type { Context, Hono } from 'hono';
import { stream } from 'hono/streaming';
import * as z from 'zod';
import type { RunSources } from '../queries/runAnswers.ts';
import type { TableFormat } from '../queries/exports.ts';
import { DEFAULT_SIGNALS, runHealth, type SignalSpec } from '../queries/health.ts';
import { SEARCH_RESULTS } from '../queries/limits.ts';
import type { SearchTarget } from '../queries/search.ts';
import { NotFound } from '../run/errors.ts';
import { BadArgument } from '../queries/limits.ts';
import { classify, scrubPaths, unknownRun } from './errors.ts';
import { downloadName } from './downloads.ts';
import { jsonResponse, markPartial } from './json.ts';
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
  .transform((s) => s.split(':').map(Number) as [number, number])
  .refine((ids) => ids.every(Number.isSafeInteger), 'STEP and SAMPLE must be integers below 2^53');
const sampleDiffQuery = z.object({
  a: sampleRef.optional(),
  b: sampleRef.optional(),
  step: intParam.optional(),
  group: intParam.optional(),
  eval: boolParam.default(false),
  eval_a: boolParam.optional(),
  eval_b: boolParam.optional(),
});
const searchQuery = z.object({ q: z.string(), limit: limitedInt(SEARCH_RESULTS) });

const CONTENT_TYPES: Record<TableFormat, string> = { csv: 'text/csv; charset=utf-8', parquet: 'application/vnd.apache.parquet' };

function download(c: Context, bytes: Uint8Array, type: string, filename: string): Response {
  return c.body(bytes as unknown as ArrayBuffer, 200, {
    'content-type': type,
    'content-disposition': `attachment; filename="${filename}"`,
  });
}

// Search (its full-text index library), the diffs (the text-diff library) and the table exports (the
// Parquet writer) load with their first request: nothing on the way to a server's first answer needs them.
type SearchModule = typeof import('../queries/search.ts');
let searchModule: Promise<SearchModule> | undefined;
const loadSearch = (): Promise<SearchModule> => (searchModule ??= import('../queries/search.ts'));
let stepDiffModule: Promise<typeof import('../queries/stepDiff.ts')> | undefined;
const loadStepDiff = (): Promise<typeof import('../queries/stepDiff.ts')> => (stepDiffModule ??= import('../queries/stepDiff.ts'));
let exportsModule: Promise<typeof import('../queries/exports.ts')> | undefined;
const loadExports = (): Promise<typeof import('../queries/exports.ts')> => (exportsModule ??= import('../queries/exports.ts'));

/** The streamed search answer over some runs. */
async function searchResponse(c: Context, targets: (search: SearchModule) => SearchTarget[], query: string, limit: number, roots: readonly string[], nameRuns?: boolean): Promise<Response> {
  const search = await loadSearch();
  const { parseQuery, searchRuns } = search;
  parseQuery(query);
  c.header('content-type', 'application/x-ndjson; charset=utf-8');
  c.header('cache-control', 'no-store, no-transform');
  return stream(c, async (out) => {
    const ctrl = new AbortController();
    out.onAbort(() => ctrl.abort());
    try {
      for await (const e of searchRuns(targets(search), query, { limit, signal: ctrl.signal, nameRuns })) {
        if (ctrl.signal.aborted) break;
        // a skipped step's warning names its file as the run read it: relative to the run here
        const said = e.type === 'done' && e.warnings.length ? { ...e, warnings: e.warnings.map((w) => scrubPaths(w, roots)) } : e;
        await out.write(`${JSON.stringify(said)}\n`);
      }
    } catch (err) {
      // Headers are sent: a failure mid-scan is the stream's last line.
      const failure = classify(err);
      if (!failure) console.error('rlsight: search:', err);
      await out.write(`${JSON.stringify({ type: 'error', detail: scrubPaths(failure?.detail ?? 'internal error', roots) })}\n`);
    }
  });
}

/**
 * Two samples (`a`, `b` as STEP:SAMPLE, `a` of run A and `b` of run B), or a group's best and worst (`step`,
 * `group`, both of run A's step). `eval` applies to both sides unless `eval_a` / `eval_b` say otherwise.
 */
async function sampleDiffAnswer(q: z.infer<typeof sampleDiffQuery>, runA: RunSources, runB: RunSources, names?: [string, string]) {
  const { bestAndWorst, sampleDiff } = await loadStepDiff();
  const evalA = q.eval_a ?? q.eval;
  let evalB = q.eval_b ?? q.eval;
  let a: [number, number];
  let b: [number, number];
  if (q.a && q.b) [a, b] = [q.a, q.b];
  else if (q.step !== undefined && q.group !== undefined) {
    const [best, worst] = bestAndWorst((await runA.summary(q.step, evalA)).rows, q.group);
    [a, b] = [
      [q.step, best],
      [q.step, worst],
    ];
    // Both from one step of run A.
    [runB, evalB] = [runA, evalA];
    names = names && [names[0], names[0]];
  } else throw new BadArgument(q.a || q.b ? 'b' : 'a', 'give a and b (STEP:SAMPLE each), or step and group');
  const d = await sampleDiff({ run: runA, id: names?.[0], step: a[0], sampleIndex: a[1], evaluation: evalA }, { run: runB, id: names?.[1], step: b[0], sampleIndex: b[1], evaluation: evalB });
  if (names) [d.a.run, d.b.run] = names;
  return d;
}

/** A run a server holds, as the routes across runs see it. */
export interface NamedRun {
  id: string;
  answers: RunSources;
  roots: readonly string[];
}

const crossSearchQuery = z.object({ q: z.string(), limit: limitedInt(SEARCH_RESULTS), runs: z.string().optional() });
const runPair = { run_a: z.string().optional(), run_b: z.string().optional() };
const crossSampleDiffQuery = sampleDiffQuery.extend(runPair);
const crossStepDiffQuery = z.object({
  a: intParam,
  b: intParam,
  eval_a: boolParam.default(false),
  eval_b: boolParam.default(false),
  ...runPair,
});

/**
 * The routes that answer across the runs a server holds (mounted on the server app, ahead of the first
 * run's reference paths): `/api/rlsight/search?runs=all|ID,ID` and `/api/rlsight/diff/{steps,samples}?run_a&run_b`
 * (run B defaults to run A). Without those parameters they answer for the first run, like its own routes; under
 * `/api/runs/{id}/rlsight/…` (`prefix` with a `:run` segment) for that run, so an app showing one run can still
 * compare it with another.
 */
/** The run named by the path (`/api/runs/{id}/…`), if any. */
function homeRun(c: Context): string | undefined {
  return (c.req.param() as Record<string, string | undefined>).run;
}

export function mountRunsAnswers(app: Hono, runs: () => readonly NamedRun[], prefix = '/api'): void {
  const pick = (id: string | undefined, param: string, home?: string): NamedRun => {
    const all = runs();
    if (id === undefined && home !== undefined) {
      const r = all.find((x) => x.id === home);
      if (!r) throw new NotFound(unknownRun(home, all.map((x) => x.id)));
      return r;
    }
    if (id === undefined) {
      if (!all[0]) throw new NotFound('no run is being served');
      return all[0];
    }
    const r = all.find((x) => x.id === id);
    if (!r) throw new BadArgument(param, `${param}: ${unknownRun(id, all.map((x) => x.id))}`);
    return r;
  };
  app.get(`${prefix}/rlsight/search`, (c) => {
    const q = parseParams(crossSearchQuery, c.req.query());
    const chosen = q.runs === undefined ? [pick(undefined, 'runs', homeRun(c))] : q.runs === 'all' ? [...runs()] : q.runs.split(',').map((id) => pick(id, 'runs'));
    const twice = chosen.find((r, i) => chosen.findIndex((x) => x.id === r.id) !== i);
    if (twice) throw new BadArgument('runs', `runs: ${JSON.stringify(twice.id)} is named twice`);
    return searchResponse(
      c,
      () => chosen.map((r) => ({ search: r.answers.searchTexts(), run: r.answers, name: r.id })),
      q.q,
      q.limit,
      chosen.flatMap((r) => r.roots),
      q.runs !== undefined,
    );
  });
  app.get(`${prefix}/rlsight/diff/steps`, async (c) => {
    const q = parseParams(crossStepDiffQuery, c.req.query());
    const ra = pick(q.run_a, 'run_a', homeRun(c));
    const rb = pick(q.run_b ?? q.run_a, 'run_b', homeRun(c));
    const { diffSide, stepDiff } = await loadStepDiff();
    // two runs: a side that cannot be read says which run it is
    const side = ra.id === rb.id ? <T>(_: string, p: Promise<T>) => p : namingRun;
    const a = await side(ra.id, diffSide(ra.answers, q.a, q.eval_a, ra.id));
    const b = await side(rb.id, diffSide(rb.answers, q.b, q.eval_b, rb.id));
    return jsonResponse(c, stepDiff(a, b));
  });
  app.get(`${prefix}/rlsight/diff/samples`, async (c) => {
    const q = parseParams(crossSampleDiffQuery, c.req.query());
    const ra = pick(q.run_a, 'run_a', homeRun(c));
    const rb = pick(q.run_b ?? q.run_a, 'run_b', homeRun(c));
    return jsonResponse(c, await sampleDiffAnswer(q, ra.answers, rb.answers, [ra.id, rb.id]));
  });
}

/** `p`, its failure's message prefixed with the run it is about (`run collapse: rollout_data/1.pt: …`), its kind kept. */
async function namingRun<T>(id: string, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    // a copy: a run keeps a damaged step's failure and throws it again, so the one it keeps is left as it is
    const named = Object.assign(Object.create(Object.getPrototypeOf(e) as object) as Error, e);
    named.message = `run ${id}: ${e.message}`;
    throw named;
  }
}

export function mountAnswers(app: Hono, run: RunSources, opts: AnswerOptions = {}): void {
  const signals = opts.healthSignals ?? DEFAULT_SIGNALS;

  // Matches stream as newline-delimited JSON while the steps are scanned; closing the request stops the scan.
  app.get('/api/rlsight/search', (c) => {
    const q = parseParams(searchQuery, c.req.query());
    return searchResponse(c, () => [{ search: run.searchTexts(), run }], q.q, q.limit, opts.roots ?? []);
  });

  app.get('/api/rlsight/diff/steps', async (c) => {
    const q = parseParams(stepDiffQuery, c.req.query());
    const { diffSide, stepDiff } = await loadStepDiff();
    const a = await diffSide(run, q.a, q.eval_a);
    const b = await diffSide(run, q.b, q.eval_b);
    return jsonResponse(c, stepDiff(a, b));
  });

  app.get('/api/rlsight/diff/samples', async (c) => jsonResponse(c, await sampleDiffAnswer(parseParams(sampleDiffQuery, c.req.query()), run, run)));

  app.get('/api/rlsight/health', async (c) => {
    const board = await runHealth(run, signals, { progressive: true });
    markPartial(c, board.coverage);
    // A damaged step names its file: relative to the run, as every other answer names files.
    const scrub = (m: string): string => scrubPaths(m, opts.roots ?? []);
    return jsonResponse(c, { ...board, warnings: board.warnings.map(scrub), rows: board.rows.map((r) => (r.damaged ? { ...r, damaged: scrub(r.damaged) } : r)) });
  });

  app.get('/api/rlsight/export/metrics', async (c) => {
    const { encodeTable, runMetricsTable, tableFormat } = await loadExports();
    const format = tableFormat(parseParams(formatQuery, c.req.query()).format);
    // a key written under another name is said by the CLI; the download holds the same columns
    const bytes = encodeTable((await runMetricsTable(run)).table, format);
    return download(c, bytes, CONTENT_TYPES[format], downloadName(c, `metrics.${format}`));
  });

  app.get('/api/rlsight/export/rollout/:rollout_id', async (c) => {
    const { rollout_id: step } = parseParams(rolloutPath, c.req.param());
    const q = parseParams(rolloutQuery, c.req.query());
    const { encodeTable, rolloutTable, tableFormat } = await loadExports();
    const format = tableFormat(q.format);
    const bytes = encodeTable(await rolloutTable(run, step, q.eval), format);
    return download(c, bytes, CONTENT_TYPES[format], downloadName(c, `${q.eval ? 'eval_' : ''}${step}.rollout.${format}`));
  });

  app.get('/api/rlsight/export/sample/:rollout_id/:sample_index', async (c) => {
    const { rollout_id: step, sample_index: idx } = parseParams(samplePath, c.req.param());
    const q = parseParams(evalQuery, c.req.query());
    const doc = await (await loadExports()).sampleDocument(run, step, idx, q.eval);
    c.header('content-disposition', `attachment; filename="${downloadName(c, `${q.eval ? 'eval_' : ''}${step}.sample_${idx}.json`)}"`);
    return jsonResponse(c, doc);
  });
}
