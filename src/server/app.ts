// The HTTP app: security gates, gzip, the reference's API, live events and the web app, over one open run.
import { Hono } from 'hono';
import { COMPRESSIBLE_CONTENT_TYPE_REGEX, compress } from 'hono/compress';
import { DEFAULT_LOW_MFU } from '../queries/advisory.ts';
import type { SignalSpec } from '../queries/health.ts';
import { mountAnswers } from './answers.ts';
import { EventFeed, mountEvents } from './events.ts';
import { failureResponse } from './errors.ts';
import { mountMeta } from './meta.ts';
import { mountMetrics } from './metrics.ts';
import { mountRollout } from './rollout.ts';
import { allowedHosts, hostGuard, readOnlyMethods } from './security.ts';
import type { RunSources } from '../queries/runAnswers.ts';
import { mountStatic } from './static.ts';
import { mountTimeline } from './timeline.ts';
import { mountTrace } from './trace.ts';

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
  /** Where follow announcements are published (one feed per server). */
  feed?: EventFeed;
  /** Health-board thresholds (`--health-config`). */
  healthSignals?: readonly SignalSpec[];
}

/** The app over an open run. */
export function createApp(args: { run: RunSources; options?: AppOptions }): Hono {
  const { run } = args;
  const options = args.options ?? {};
  const app = new Hono();
  const feed = options.feed ?? new EventFeed();
  app.use(hostGuard(allowedHosts(options.host ?? '127.0.0.1', options.allowHosts ?? [])));
  app.use(readOnlyMethods);
  // Heatmap frames are mostly runs of equal bytes: gzip them too.
  app.use(compress({ contentTypeFilter: (type) => COMPRESSIBLE_CONTENT_TYPE_REGEX.test(type) || type.startsWith('application/octet-stream') || type.startsWith('application/vnd.rlsight.columns') }));
  app.onError((err, c) => failureResponse(c, err, run.roots));
  mountMeta(app, run, { follow: options.follow ?? false, useUtilizationOverview: options.useUtilizationOverview ?? false });
  mountTimeline(app, run);
  mountMetrics(app, run, options.lowMfu ?? DEFAULT_LOW_MFU);
  mountRollout(app, run);
  const answers = run.answers?.();
  if (answers) mountAnswers(app, answers, { healthSignals: options.healthSignals, roots: run.roots });
  mountTrace(app, run);
  mountEvents(app, feed, options.follow ? 'follow' : 'static');
  mountStatic(app, options.staticDir);
  app.notFound((c) => c.json({ detail: 'Not Found' }, 404));
  return app;
}
