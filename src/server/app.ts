// The HTTP app: security gates, gzip, the API of every served run, live events and the web app.
//
// Each run has its own API app (`runApi`): every route family is mounted there ONCE, with paths under
// `/api/…`. The server answers it under `/api/runs/{id}/…` for each run and under the reference paths
// `/api/…` for the first run, unchanged. A new route family is one `mountX(api, run)` line in `runApi`.
// The quick preset (LinearRouter): registering routes costs nothing and no matcher is compiled on the
// first request, which is on the way to a server's first answer; a few dozen routes match as fast.
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Hono } from 'hono/quick';
import { compress } from 'hono/compress';
import { DEFAULT_LOW_MFU } from '../queries/advisory.ts';
import { checkLatestKeys } from '../queries/limits.ts';
import type { SignalSpec } from '../queries/health.ts';
import type { RunSources } from '../queries/runAnswers.ts';
import type { RunsAnswer } from '../wire/index.ts';
import { mountAnswers, mountRunsAnswers } from './answers.ts';
import { failureResponse, unknownRun } from './errors.ts';
import { EventFeed, mountEvents } from './events.ts';
import { withRunId } from './downloads.ts';
import { jsonResponse, markPartial } from './json.ts';
import { oneValueEach, parseParams } from './params.ts';
import * as z from 'zod';
import { mountMeta } from './meta.ts';
import { mountMetrics } from './metrics.ts';
import { mountRollout } from './rollout.ts';
import { answerSignal, compressible, sharedAnswers } from './sharedAnswers.ts';
import { allowedHosts, hostGuard, readOnlyMethods } from './security.ts';
import { mountStatic } from './static.ts';
import { mountTimeline } from './timeline.ts';
import { mountTrace } from './trace.ts';
import { foreground } from '../run/open.ts';

export interface AppOptions {
  /** `--follow`: the app is told to expect growth (`meta.mode`). */
  follow?: boolean;
  useUtilizationOverview?: boolean;
  lowMfu?: number;
  /** The address the server binds; its name is accepted in Host headers. */
  host?: string;
  /** Extra Host names to accept (`--allow-host`). */
  allowHosts?: string[];
  /** The built web app (default `web/dist`). */
  staticDir?: string;
  /** Where the first run's follow announcements are published. */
  feed?: EventFeed;
  /** Health-board thresholds (`--health-config`). */
  healthSignals?: readonly SignalSpec[];
}

/** One served run: its URL name, its answers, where its follow announcements go, and its API app. */
export interface ServedRun {
  readonly id: string;
  readonly run: RunSources;
  readonly feed: EventFeed;
  readonly api: Hono;
  /** Its folder as the app shows it (relative, never a path of the machine); absent for a run served alone by a test. */
  readonly folder?: string;
}

/** The runs a server answers about; the first is the one the reference paths answer for. */
export interface RunSet {
  runs(): readonly ServedRun[];
  get(id: string): ServedRun | undefined;
}

/**
 * What a kept telemetry answer depends on: the telemetry, and for the fleet answer, which lists it, the damage
 * the run reported so far (a damaged dump is found without the telemetry changing). Null: nothing is kept.
 */
function keptAnswerVersion(run: RunSources, path: string): string | null {
  const telemetry = run.telemetryVersion();
  if (telemetry === null || path !== '/api/timeline/fleet') return telemetry;
  return `${telemetry}|${createHash('sha1').update(run.warnings().join('\n')).digest('base64')}`;
}

/** The API of one run: every route family, mounted once. */
export function runApi(run: RunSources, feed: EventFeed, options: AppOptions = {}): Hono {
  const api = new Hono();
  // an answer no one waits for any more ends without a word (its stopping is no failure)
  api.onError((err, c) => (answerSignal(c).aborted ? new Response(null, { status: 499 }) : failureResponse(c, err, run.roots)));
  mountMeta(api, run, { follow: options.follow ?? false, useUtilizationOverview: options.useUtilizationOverview ?? false });
  // answers asked for at once are computed once; telemetry answers are kept while the run's telemetry is unchanged
  api.use('/api/*', sharedAnswers({ version: (path) => keptAnswerVersion(run, path) }));
  mountTimeline(api, run);
  mountMetrics(api, run, options.lowMfu ?? DEFAULT_LOW_MFU);
  mountRollout(api, run);
  mountAnswers(api, run, { healthSignals: options.healthSignals, roots: run.roots });
  mountTrace(api, run);
  mountEvents(api, feed, options.follow ? 'follow' : 'static');
  api.notFound((c) => c.json({ detail: 'Not Found' }, 404));
  return api;
}

/** A fixed set of runs, named and each given its API. */
export function fixedRunSet(entries: readonly { id: string; run: RunSources; feed?: EventFeed }[], options: AppOptions = {}): RunSet {
  const served = entries.map((e): ServedRun => {
    const feed = e.feed ?? new EventFeed();
    return { id: e.id, run: e.run, feed, api: runApi(e.run, feed, options) };
  });
  const byId = new Map(served.map((s) => [s.id, s]));
  return { runs: () => served, get: (id) => byId.get(id) };
}

/** `/api/runs/{id}/rest` → `/api/rest` of the same request (the run's API knows only the reference paths). */
function forRunApi(req: Request, rest: string): Request {
  const url = new URL(req.url);
  url.pathname = `/api/${rest}`;
  return new Request(url, req);
}

const runsQuery = z.object({
  latest: z
    .string()
    .transform((v) => v.split(',').filter(Boolean))
    .optional(),
});

/** The app over several runs. */
export function createMultiApp(args: { runs: RunSet; options?: AppOptions }): Hono {
  const { runs } = args;
  const options = args.options ?? {};
  const app = new Hono();
  app.use(hostGuard(allowedHosts(options.host ?? '127.0.0.1', options.allowHosts ?? [])));
  app.use(readOnlyMethods);
  app.use('/api/*', oneValueEach);
  // requests being answered hold back the background warm-up; the event stream (it stays open) and the run
  // header the app polls for the warm-up's progress (answered at once) do not
  app.use('/api/*', async (c, next) => {
    foreground.noteRequest();
    if (/\/(events|meta|runs)$/.test(c.req.path)) return next();
    const done = foreground.begin();
    try {
      await next();
    } catch (e) {
      done();
      throw e;
    }
    // A body streams after its handler returns: the request is answered once its last byte is out.
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (outgoing && !outgoing.destroyed && !outgoing.writableFinished) outgoing.once('close', done);
    else done();
  });
  // what the run APIs do not gzip themselves (the event stream, search, the app); heatmap frames too
  app.use(compress({ contentTypeFilter: compressible }));
  app.onError((err, c) => failureResponse(c, err, runs.runs().flatMap((r) => r.run.roots)));

  app.get('/api/runs', async (c) => {
    const listed = runs.runs();
    // refused even when no run is served yet (each run's listing checks them too)
    const keys = checkLatestKeys(parseParams(runsQuery, c.req.query()).latest ?? []);
    // at once: a slime or collected run's steps not read yet are read in the background (see each row's `coverage`)
    const body: RunsAnswer = {
      runs: await Promise.all(
        listed.map(async (r, i) => {
          const row = await r.run.listing(r.id, i === 0, { follow: options.follow ?? false, latest: keys, progressive: true });
          return r.folder === undefined ? row : { ...row, folder: r.folder };
        }),
      ),
    };
    markPartial(c, body.runs.find((r) => r.coverage !== undefined)?.coverage);
    return jsonResponse(c, body);
  });
  const namedRuns = () => runs.runs().map((r) => ({ id: r.id, answers: r.run, roots: r.run.roots }));
  mountRunsAnswers(app, namedRuns, '/api/runs/:run');
  app.all('/api/runs/:run/*', (c) => {
    const served = runs.get(c.req.param('run'));
    if (!served) return c.json({ detail: unknownRun(c.req.param('run'), runs.runs().map((r) => r.id)) }, 404);
    // what follows `/api/runs/{run}/`, however the run's name was spelled (`mil%65s` is `miles`)
    const rest = new URL(c.req.url).pathname.split('/').slice(4).join('/');
    return served.api.fetch(forRunApi(c.req.raw, rest), withRunId(c.env, served.id));
  });
  // Search and step diff across the runs held (`?runs=`, `?run_a&run_b`), ahead of the first run's own routes.
  mountRunsAnswers(app, namedRuns);
  app.all('/api/*', (c) => {
    const first = runs.runs()[0];
    if (!first) return c.json({ detail: 'no run is being served' }, 404);
    return first.api.fetch(c.req.raw, withRunId(c.env, first.id));
  });
  mountStatic(app, options.staticDir);
  app.notFound((c) => c.json({ detail: 'Not Found' }, 404));
  return app;
}

/** The app over one open run (its URL name `run`). */
export function createApp(args: { run: RunSources; options?: AppOptions }): Hono {
  const options = args.options ?? {};
  return createMultiApp({ runs: fixedRunSet([{ id: 'run', run: args.run, feed: options.feed }], options), options });
}
