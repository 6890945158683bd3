// The app over a fresh copy of a fixture run, for one suite: opened before its tests, removed after.
import { after, before } from 'node:test';
import { createApp } from '../../src/server/app.ts';
import { openRun, type OpenRun } from '../../src/commands/openRun.ts';
import { copyFixtureRun, type RunCopy } from './fixtures.ts';

export interface ServedFixture {
  readonly app: ReturnType<typeof createApp>;
  readonly run: OpenRun;
  /** A GET of `path` as a browser on this machine sends it (the Host header the server accepts). */
  get(path: string, headers?: Record<string, string>): Promise<Response>;
}

/** Call inside a `describe`: the run is copied and opened before its tests and removed after them. */
export function servedFixture(name = 'miles-demo'): ServedFixture {
  let copy: RunCopy | undefined;
  let run: OpenRun | undefined;
  let app: ReturnType<typeof createApp> | undefined;
  before(async () => {
    copy = copyFixtureRun(name);
    run = await openRun(copy.dir);
    app = createApp({ run });
  });
  after(() => copy?.dispose());
  return {
    get app() {
      return app!;
    },
    get run() {
      return run!;
    },
    get: async (path, headers = {}) => app!.request(path, { headers: { host: '127.0.0.1', ...headers } }),
  };
}
