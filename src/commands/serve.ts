// `rlsight serve`: parse flags, open the runs, start the read-only server.
import { existsSync, realpathSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { RunSources } from '../queries/runAnswers.ts';
import type { StepMetricsInputs } from '../queries/slimeRollouts.ts';
import { DEFAULT_MEMORY_BUDGET, runFormats } from '../run/open.ts';
import { defaultRunCache } from './cacheHome.ts';
import { cacheDirFlag, CommandUsageError as UsageError, numberFlag, parseFlags, portFlag, terminalSafe } from './common.ts';

/** How long a stopped server waits for its runs' pending cache writes before it exits. */
const SHUTDOWN_WRITES_MS = 3000;

export interface ServeFlags {
  /** Run directories to serve, in order (the first answers the reference paths). */
  runDirs: string[];
  /** `--runs ROOT`: serve every run directory found under it (searched again with --follow). */
  runsRoot?: string;
  host: string;
  port: number;
  follow: boolean;
  /** `--tensor-lru N`: at most N steps' records resident (else as many as their byte budget holds). */
  tensorLru?: number;
  /** `--cache-dir DIR`: where the derived caches go (one run: DIR itself; several: DIR/run-N). */
  cacheDir?: string;
  /** `--no-cache`: keep derived data in memory only (else each run gets a cache folder of its own under the user's cache directory). */
  noCache: boolean;
  /** MiB each run's resident telemetry columns may hold. */
  memoryBudgetMiB: number;
  useUtilizationOverview: boolean;
  lowMfuThreshold: number;
  allowHosts: string[];
  healthConfig?: string;
  /** `--prometheus URL`: engine series from Prometheus for a run that scraped none. */
  prometheus?: string;
  /** `--tensorboard LOGDIR`: the trainer's TensorBoard scalars among the run's metrics. */
  tensorboard?: string;
  /** slime's `--rollout-num-gpus` and `--eval-datasets` (its step metrics; a slime run's only). */
  slime: StepMetricsInputs;
}

/** The port to serve on: `--port N` in [0, 65535], 7788 by default. */
/** A directory rlsight can serve: it exists and holds dumps or telemetry. `flag` names where it was given. */
export function checkRunDir(dir: string, flag = '--dump-details'): string {
  const abs = resolve(dir);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new UsageError(`${flag}: no such directory: ${dir}`);
  }
  if (!isDir) throw new UsageError(`${flag}: not a directory: ${dir}`);
  const markers = ['dashboard', 'rollout_data', 'train_data', 'dashboard_columns'];
  if (!markers.some((m) => existsSync(join(abs, m)))) {
    throw new UsageError(`${flag}: ${dir} is not a run directory (no ${markers.join('/, ')}/ inside)`);
  }
  return abs;
}

function checkRoot(dir: string): string {
  const abs = resolve(dir);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new UsageError(`--runs: no such directory: ${dir}`);
  }
  if (!isDir) throw new UsageError(`--runs: not a directory: ${dir}`);
  return abs;
}

/** Every option `serve DIR` takes (`serve FILE.pt|GLOB` tells its arguments apart with them). */
export const SERVE_OPTIONS = {
  'dump-details': { type: 'string', multiple: true },
  runs: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  follow: { type: 'boolean' },
  'tensor-lru': { type: 'string' },
  'cache-dir': { type: 'string' },
  'no-cache': { type: 'boolean' },
  'memory-budget': { type: 'string' },
  'use-utilization-overview': { type: 'boolean' },
  'low-mfu-threshold': { type: 'string' },
  'allow-host': { type: 'string', multiple: true },
  'health-config': { type: 'string' },
  prometheus: { type: 'string' },
  tensorboard: { type: 'string' },
  'rollout-num-gpus': { type: 'string' },
  'eval-datasets': { type: 'string' },
} as const;

export function parseServeFlags(argv: string[]): ServeFlags {
  const { values, tokens } = parseFlags({ args: argv, allowPositionals: true, options: SERVE_OPTIONS });
  // Runs are served in command-line order, whichever way each was given.
  const runDirs = tokens.flatMap((t) =>
    t.kind === 'positional' ? [checkRunDir(t.value, 'serve')] : t.kind === 'option' && t.name === 'dump-details' && t.value !== undefined ? [checkRunDir(t.value)] : [],
  );
  // the same run named twice (however spelled, links followed) would be served twice under two names
  const seen = new Map<string, string>();
  for (const dir of runDirs) {
    const real = realpathSync(dir);
    if (seen.has(real)) throw new UsageError(`serve: ${dir} is named twice (as ${seen.get(real)} too); each run is served once`);
    seen.set(real, dir);
  }
  const runsRoot = values.runs === undefined ? undefined : checkRoot(values.runs);
  // Inputs a slime dump lacks; a miles run logs the metrics they feed itself, so they would change nothing.
  const onlySlime = runsRoot === undefined && runDirs.length > 0 && runDirs.every((d) => runFormats(d).includes('slime'));
  for (const flag of ['rollout-num-gpus', 'eval-datasets'] as const) {
    if (values[flag] !== undefined && !onlySlime) throw new UsageError(`--${flag}: only for slime runs (it fills in what a slime dump lacks); this run is not one and logs those metrics itself`);
  }
  if (values['no-cache'] && values['cache-dir'] !== undefined) throw new UsageError('--no-cache: give either --cache-dir DIR or --no-cache, not both');
  if (runDirs.length === 0 && runsRoot === undefined) throw new UsageError('a run directory is required: serve DIR [DIR...], --runs ROOT or --dump-details DIR');
  return {
    runDirs,
    runsRoot,
    host: values.host ?? '127.0.0.1',
    port: portFlag(values.port),
    follow: values.follow ?? false,
    tensorLru: values['tensor-lru'] === undefined ? undefined : numberFlag('tensor-lru', values['tensor-lru'], 0, { int: true, min: 0 }),
    cacheDir: cacheDirFlag(values['cache-dir']),
    noCache: values['no-cache'] ?? false,
    memoryBudgetMiB: numberFlag('memory-budget', values['memory-budget'], DEFAULT_MEMORY_BUDGET / 2 ** 20, { min: 16 }),
    useUtilizationOverview: values['use-utilization-overview'] ?? false,
    lowMfuThreshold: numberFlag('low-mfu-threshold', values['low-mfu-threshold'], 0.15, { min: 0 }),
    allowHosts: values['allow-host'] ?? [],
    healthConfig: values['health-config'],
    prometheus: values.prometheus,
    tensorboard: tensorboardFlag(values.tensorboard, runDirs.length, runsRoot !== undefined),
    slime: {
      rolloutNumGpus: values['rollout-num-gpus'] === undefined ? undefined : numberFlag('rollout-num-gpus', values['rollout-num-gpus'], 0, { int: true, min: 1 }),
      evalDatasetNames: values['eval-datasets']?.split(',').map((s) => s.trim()).filter(Boolean),
    },
  };
}

/** `--tensorboard LOGDIR`: an existing folder, for one run. */
function tensorboardFlag(raw: string | undefined, runs: number, root: boolean): string | undefined {
  if (raw === undefined) return undefined;
  if (runs !== 1 || root) throw new UsageError('--tensorboard: give it with exactly one run directory (the logdir belongs to that run)');
  const dir = resolve(raw);
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // (`rlsight collect --tensorboard` waits for a logdir to appear; a server reads what is there)
    throw new UsageError(`--tensorboard: no such directory: ${raw}`);
  }
  if (!isDir) throw new UsageError(`--tensorboard: ${raw} is not a directory`);
  return dir;
}

function banner(url: string, host: string, port: number, runs: readonly { id: string }[]): string {
  const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const lines = [
    `rlsight serving ${url}`,
    `from a laptop: ssh -N -L ${port}:${local}:${port} ${hostname()}   then open http://127.0.0.1:${port}/`,
  ];
  if (runs.length > 1) lines.push(`runs: ${runs.map((r) => r.id).join(', ')}`);
  if (local !== host) lines.push(`listening on all interfaces: requests must name localhost or an --allow-host NAME in their Host header`);
  return lines.join('\n');
}

/**
 * Each run's derived caches get their own folder (runs never share one): under --cache-dir, or by default
 * under the user's cache directory; none with --no-cache, or (said on stderr) when the default cannot be used.
 */
function cacheFor(flags: ServeFlags, dir: string, index: number, count: number): string | undefined {
  if (flags.cacheDir) return count <= 1 ? flags.cacheDir : join(flags.cacheDir, `run-${index}`);
  if (flags.noCache) return undefined;
  const found = defaultRunCache(dir);
  if ('dir' in found) return found.dir;
  console.error(`rlsight: ${dir}: derived data kept in memory only: ${found.problem} (--cache-dir DIR chooses another place)`);
  return undefined;
}

export async function serve(flags: ServeFlags): Promise<void> {
  const { openRun } = await import('./openRun.ts');
  const { ServedRuns } = await import('../server/runSet.ts');
  const { startRunsServer } = await import('../server/listen.ts');
  const { loadHealthConfig } = await import('./health.ts');
  const healthSignals = flags.healthConfig === undefined ? undefined : (() => {
    try {
      return loadHealthConfig(flags.healthConfig);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  })();
  let opened = 0;
  const open = (dir: string): Promise<RunSources> =>
    openRun(dir, {
      tensorLru: flags.tensorLru,
      cacheDir: cacheFor(flags, dir, opened++, flags.runsRoot ? 2 : flags.runDirs.length),
      memoryBudget: flags.memoryBudgetMiB * 2 ** 20,
      // slime keeps SGLang's serving metrics in Prometheus: `--prometheus URL` brings them in as engine series.
      prometheus: flags.prometheus,
      tensorboard: flags.tensorboard,
      slime: flags.slime,
    }).catch((err: Error) => {
      // The reader refuses what it cannot serve (e.g. a cache dir inside the run): a usage problem.
      const param = (err as { param?: string }).param;
      throw param ? new UsageError(`--${param === 'cacheDir' ? 'cache-dir' : param}: ${err.message}`) : err;
    });
  const options = {
    healthSignals,
    host: flags.host,
    port: flags.port,
    follow: flags.follow,
    useUtilizationOverview: flags.useUtilizationOverview,
    lowMfu: flags.lowMfuThreshold,
    allowHosts: flags.allowHosts,
  };
  const runs = new ServedRuns(options, open);
  for (const dir of flags.runDirs) runs.add(dir, await open(dir));
  if (flags.runsRoot) {
    await runs.discover(flags.runsRoot);
    if (flags.follow) runs.watch(flags.runsRoot);
    else if (runs.runs().length === 0) throw new UsageError(`--runs: no run directory under ${flags.runsRoot}`);
  }
  const server = await startRunsServer(runs, options);
  console.log(banner(server.url, flags.host, server.port, runs.runs()));
  // What a view's first requests read (the first run's meta) is made ready while a browser loads the app.
  runs.runs()[0]?.run.catalog().catch(() => {});
  for (const r of runs.runs()) if (r.run.getReady?.()) break;
  for (const r of runs.runs()) for (const w of r.run.warnings()) console.warn(`warning: ${terminalSafe(`${runs.runs().length > 1 ? `${r.id}: ` : ''}${w}`)}`);
  const stop = (): void => {
    // what the runs still keep for the next process (a step's records, written after its answers) is written
    // before the process ends, for a few seconds at most
    void server
      .close()
      .then(() => Promise.race([Promise.all(runs.runs().map((r) => r.run.close().catch(() => {}))), new Promise((r) => setTimeout(r, SHUTDOWN_WRITES_MS))]))
      .then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
