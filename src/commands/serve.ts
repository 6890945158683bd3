// `rlsight serve`: parse flags, open the runs, start the read-only server.
import { existsSync, realpathSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import type { RunAnswers } from '../queries/runAnswers.ts';
import { evalDatasets } from '../queries/slimePerf.ts';
import type { RunModel } from '../run/model.ts';
import { relativeToRoots } from '../formats/fileAccess.ts';
import type { StepMetricsInputs } from '../queries/slimeRollouts.ts';
import { DEFAULT_MEMORY_BUDGET, runFormats } from '../run/open.ts';
import { defaultRunCache } from './cacheHome.ts';
import { notARun } from './runPaths.ts';
import { cacheDirFlag, checkListen, CommandUsageError as UsageError, hostFlag, isHostName, numberFlag, parseFlags, portFlag, tensorboardFlag, terminalSafe } from './common.ts';

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
  /** slime's `--eval-datasets` (its step metrics; a slime run's only). */
  slime: StepMetricsInputs;
}

/**
 * Why `--rollout-num-gpus` is refused, whatever the run: every metric slime computes with the GPU count
 * (`perf/*tokens_per_gpu_per_sec`) also divides by rollout_time, which a dump does not hold.
 */
export const ROLLOUT_NUM_GPUS_REFUSED =
  "--rollout-num-gpus: the metrics it feeds (perf/tokens_per_gpu_per_sec, perf/effective_tokens_per_gpu_per_sec) also divide by slime's rollout_time, which no dump holds, so it would compute nothing; a run that logs slime's metrics itself (through slime's hooks, or --tensorboard) has them already";

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
  if (runFormats(abs).length === 0) throw new UsageError(`${flag}: ${notARun(dir)}`);
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
  if (values['rollout-num-gpus'] !== undefined) throw new UsageError(ROLLOUT_NUM_GPUS_REFUSED);
  // An input a slime dump lacks; a miles run logs the metrics it feeds itself, so it would change nothing.
  const onlySlime = runsRoot === undefined && runDirs.length > 0 && runDirs.every((d) => runFormats(d).includes('slime'));
  if (values['eval-datasets'] !== undefined && !onlySlime) throw new UsageError('--eval-datasets: only for slime runs (it fills in what a slime dump lacks); this run is not one and logs those metrics itself');
  if (values['no-cache'] && values['cache-dir'] !== undefined) throw new UsageError('--no-cache: give either --cache-dir DIR or --no-cache, not both');
  if (runDirs.length === 0 && runsRoot === undefined) throw new UsageError('a run directory is required: serve DIR [DIR...], --runs ROOT or --dump-details DIR');
  return {
    runDirs,
    runsRoot,
    host: hostFlag(values.host),
    port: portFlag(values.port),
    follow: values.follow ?? false,
    tensorLru: values['tensor-lru'] === undefined ? undefined : numberFlag('tensor-lru', values['tensor-lru'], 0, { int: true, min: 0 }),
    cacheDir: cacheDirFlag(values['cache-dir']),
    noCache: values['no-cache'] ?? false,
    memoryBudgetMiB: numberFlag('memory-budget', values['memory-budget'], DEFAULT_MEMORY_BUDGET / 2 ** 20, { min: 16 }),
    useUtilizationOverview: values['use-utilization-overview'] ?? false,
    lowMfuThreshold: numberFlag('low-mfu-threshold', values['low-mfu-threshold'], 0.15, { min: 0 }),
    allowHosts: allowHostFlag(values['allow-host']),
    healthConfig: values['health-config'],
    prometheus: prometheusFlag(values.prometheus),
    tensorboard: serveTensorboardFlag(values.tensorboard, runDirs.length, runsRoot !== undefined),
    slime: { evalDatasetNames: evalDatasetsFlag(values['eval-datasets']) },
  };
}

/** `--prometheus URL`: the Prometheus server's http(s) URL. */
export function prometheusFlag(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    // not a URL at all
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    throw new UsageError(`--prometheus: expected the Prometheus server's http(s) URL, such as http://127.0.0.1:9090, got '${raw}'`);
  }
  return raw;
}

/**
 * `--allow-host NAME` (repeatable): host names as a Host header names them, compared without the port. A URL,
 * a NAME:PORT or an empty value would never match a request: refused, naming the host name meant.
 */
export function allowHostFlag(raws: readonly string[] | undefined): string[] {
  return (raws ?? []).map((raw) => {
    if (raw.trim() === '') throw new UsageError('--allow-host: expected a host name, got an empty value');
    if (isHostName(raw)) return raw;
    // an IPv6 address, in brackets as a Host header carries it (bare: two colons or more; one is NAME:PORT)
    const inBrackets = /^\[([^\]]+)\]$/.exec(raw)?.[1];
    if (inBrackets !== undefined && isHostName(inBrackets, true)) return raw;
    if ((raw.match(/:/g) ?? []).length >= 2 && isHostName(raw, true)) return `[${raw}]`;
    let meant: string | null = null;
    try {
      meant = new URL(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(raw) ? raw : `http://${raw}`).hostname;
    } catch {
      // nothing a host name can be read from
    }
    const hint = meant !== null && meant !== raw && (isHostName(meant) || /^\[[0-9a-f:.]+\]$/.test(meant)) ? `: give --allow-host ${meant}` : '';
    throw new UsageError(`--allow-host: expected a host name (as a request's Host header names it, without scheme, port or path), got '${raw}'${hint}`);
  });
}

/**
 * `--eval-datasets A,B`: the eval datasets' names, in dump order. An empty name (`a,,b`) or one given twice
 * would label a dataset's charts wrongly or merge two datasets' keys: refused.
 */
export function evalDatasetsFlag(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const names = raw.split(',').map((s) => s.trim());
  if (names.some((n) => n === '')) throw new UsageError(`--eval-datasets: an empty name in '${raw}'; give the eval datasets' names separated by commas, in dump order (--eval-datasets aime24,gsm8k_test)`);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw new UsageError(`--eval-datasets: '${twice}' is given twice; each eval dataset needs a name of its own`);
  return names;
}

/**
 * What `--eval-datasets` names, against the datasets a run's eval dumps hold (slime stores no names: a new
 * dataset starts where the sample index stops increasing): one line per dataset count that differs from the
 * names given, saying which datasets go without a name (shown as `dataset<i>`) or which names go unused.
 */
export async function evalDatasetsMismatch(model: Pick<RunModel, 'traces' | 'roots'>, names: readonly string[]): Promise<string[]> {
  const byCount = new Map<number, string[]>();
  for (const d of (await model.traces?.allDumps(true)) ?? []) {
    const n = evalDatasets(d.samples).length;
    if (n !== names.length) byCount.set(n, [...(byCount.get(n) ?? []), relativeToRoots(d.file, model.roots)]);
  }
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  return [...byCount].map(([n, files]) => {
    const where = files.length === 1 ? `${files[0]} holds` : `${files[0]} and ${plural(files.length - 1, 'other eval dump')} hold`;
    const unnamed = Array.from({ length: Math.max(0, n - names.length) }, (_, i) => `dataset${names.length + i}`);
    const unused = names.slice(n);
    const effect = unnamed.length > 0 ? `the unnamed ${unnamed.length === 1 ? 'one is' : 'ones are'} labelled ${unnamed.join(', ')}` : `${unused.join(', ')} ${unused.length === 1 ? 'is' : 'are'} not used`;
    return `--eval-datasets: ${plural(names.length, 'name')} given (${names.join(', ')}), but ${where} ${plural(n, 'eval dataset')} (a new one starts where the sample index stops increasing); ${effect}`;
  });
}

/** `--tensorboard LOGDIR`: an existing folder, for one run. */
function serveTensorboardFlag(raw: string | undefined, runs: number, root: boolean): string | undefined {
  if (raw === undefined) return undefined;
  if (runs !== 1 || root) throw new UsageError('--tensorboard: give it with exactly one run directory (the logdir belongs to that run)');
  return tensorboardFlag(raw);
}

/** Says, as warnings once the eval dumps are read, where `--eval-datasets` names more or fewer datasets than they hold. */
export function warnEvalDatasetsMismatch(model: Pick<RunModel, 'traces' | 'roots'>, names: readonly string[], prefix = ''): void {
  void evalDatasetsMismatch(model, names)
    .then((lines) => {
      for (const w of lines) console.warn(`warning: ${terminalSafe(`${prefix}${w}`)}`);
    })
    .catch(() => {}); // an unreadable eval dump is the run's own warning
}

/**
 * The served runs' ids; a run whose id is not its folder's name, or whose folder name another run shares
 * (`teamA/healthy` and `teamB/healthy` are `teamA-healthy` and `teamB-healthy`), with its folder: relative to `--runs ROOT`,
 * else to the working directory (absolute when outside it).
 */
export function runsLine(runs: readonly { id: string; dir: string }[], root?: string): string {
  const names = runs.map((r) => basename(r.dir));
  const base = root ?? process.cwd();
  const shown = (dir: string): string => {
    const rel = relative(base, dir);
    return rel === '' ? (root === undefined ? '.' : root) : rel.startsWith('..') || isAbsolute(rel) ? dir : rel;
  };
  const named = runs.map((r, i) => (r.id !== names[i] || names.indexOf(names[i]) !== names.lastIndexOf(names[i]) ? `${r.id} = ${shown(r.dir)}` : r.id));
  return `runs: ${named.join(', ')}`;
}

function banner(url: string, host: string, port: number, runs: readonly { id: string; dir: string }[], root?: string): string {
  const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const lines = [
    `rlsight serving ${url}`,
    `from a laptop: ssh -N -L ${port}:${local}:${port} ${hostname()}   then open http://127.0.0.1:${port}/`,
  ];
  // (folder names as printable text: a name cannot move the cursor or fake a line)
  if (runs.length > 1) lines.push(terminalSafe(runsLine(runs, root)));
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
  // a name that does not resolve, an address not this machine's, a busy port: said before any run is read
  await checkListen(flags.host, flags.port);
  let opened = 0;
  const open = (dir: string): Promise<RunAnswers> =>
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
  // the runs given on the command line (the ones --eval-datasets names the datasets of)
  const given: { id: string; run: RunAnswers }[] = [];
  for (const dir of flags.runDirs) {
    const run = await open(dir);
    given.push({ id: runs.add(dir, run).id, run });
  }
  if (flags.runsRoot) {
    await runs.discover(flags.runsRoot);
    if (flags.follow) {
      const root = flags.runsRoot;
      // a run started later is said as the first ones were: by its id, and its folder where the id alone does not tell
      runs.watch(root, undefined, (added) => console.log(terminalSafe(`joined ${runsLine(added, root)}`)));
    }
    else if (runs.runs().length === 0) throw new UsageError(`--runs: no run directory under ${flags.runsRoot}`);
  }
  const server = await startRunsServer(runs, options);
  console.log(banner(server.url, flags.host, server.port, runs.runs(), flags.runsRoot));
  // What a view's first requests read (the first run's meta) is made ready while a browser loads the app.
  runs.runs()[0]?.run.catalog().catch(() => {});
  for (const r of runs.runs()) if (r.run.getReady?.()) break;
  for (const r of runs.runs()) for (const w of r.run.warnings()) console.warn(`warning: ${terminalSafe(`${runs.runs().length > 1 ? `${r.id}: ` : ''}${w}`)}`);
  // `--eval-datasets` against the datasets the eval dumps hold, once they are read (they are read for the metrics anyway)
  const names = flags.slime.evalDatasetNames;
  if (names !== undefined) for (const g of given) warnEvalDatasetsMismatch(g.run.model, names, given.length > 1 ? `${g.id}: ` : '');
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
