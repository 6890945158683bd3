// `rlsight serve` and `rlsight demo`: parse flags, open the run, start the read-only server.
import { mkdtempSync, statSync, existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { COLLECT_USAGE } from './collect/usage.ts';

const USAGE = `rlsight — observability for LLM RL post-training runs

Usage:
  rlsight serve --dump-details DIR [options]   serve a run directory (read-only; miles or slime layout)
  rlsight serve FILE.pt|'GLOB' [options]       serve slime --save-debug-rollout-data files
  rlsight demo [--port N] [--out DIR] [--large]  generate a demo run and serve it
  rlsight trace FILE.pt [--out DIR] [--no-serve]  slime viewer cache + a self-contained trace page
  rlsight health --dump-details DIR [--fail-on SIGNAL,...] [--health-config FILE] [--json]
                                               per-step failure signals; exit 1 when a --fail-on signal fired
  rlsight search --dump-details DIR QUERY [--limit N] [--cache-dir DIR]
                                               one JSON line per matching sample; QUERY: words, "a phrase",
                                               /regex/, a request or trace id, a sample index or step:sample
  rlsight export metrics --dump-details DIR --format csv|parquet --out FILE   every key, one row per step
  rlsight export rollout --dump-details DIR --step N [--eval] --format csv|parquet --out FILE
  rlsight export tensorboard --dump-details DIR --out LOGDIR       events.out.tfevents.* scalars
  rlsight export perfetto --dump-details DIR [--t0 T --t1 T] --out FILE   Chrome trace-event JSON for ui.perfetto.dev
  rlsight collect --dump-details DIR [--listen HOST:PORT] [...]    receive live telemetry (see collect options)
  rlsight prometheus-config --router HOST:PORT [--collector HOST:PORT]   print a prometheus.yml for both
  rlsight --help

serve options:
  --dump-details DIR            the run's --dump-details directory (required)
  --host HOST                   bind address (default 127.0.0.1)
  --port N                      port (default 7788)
  --follow                      tail a running job every 2 s and push changes to the app
  --tensor-lru N                rollout steps kept decoded in memory (default 2)
  --cache-dir DIR               where derived caches may be written (default: memory only)
  --memory-budget MIB           MiB the resident telemetry columns may hold (default 192)
  --use-utilization-overview    always show the fleet overview instead of per-GPU lanes
  --low-mfu-threshold X         MFU advisory threshold, 0 disables (default 0.15)
  --allow-host NAME             also answer requests for this Host name (repeatable)
  --prometheus URL              engine series from this Prometheus when the run scraped none
  --health-config FILE          health-board thresholds (JSON: {"signal": {"warn": x, "fire": y}})

${COLLECT_USAGE}

demo options:
  --port N                      port (default 7788)
  --host HOST                   bind address (default 127.0.0.1)
  --out DIR                     where to write the run (default: a new temp folder)
  --large                       128 GPUs, so the fleet overview is exercised
`;

/** A usage problem: printed as one line, exit code 2. */
export class UsageError extends Error {}

export interface ServeFlags {
  dumpDetails: string;
  host: string;
  port: number;
  follow: boolean;
  tensorLru: number;
  cacheDir?: string;
  memoryBudgetMiB: number;
  useUtilizationOverview: boolean;
  lowMfuThreshold: number;
  allowHosts: string[];
  healthConfig?: string;
  /** `--prometheus URL`: engine series from Prometheus when the run has none. */
  prometheus?: string;
}

function numberFlag(name: string, raw: string | undefined, fallback: number, opts: { int?: boolean; min?: number; max?: number } = {}): number {
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || (opts.int && !Number.isInteger(v))) {
    throw new UsageError(`--${name}: expected ${opts.int ? 'an integer' : 'a number'}, got '${raw}'`);
  }
  if ((opts.min !== undefined && v < opts.min) || (opts.max !== undefined && v > opts.max)) {
    throw new UsageError(`--${name}: ${v} is out of range [${opts.min ?? '-inf'}, ${opts.max ?? 'inf'}]`);
  }
  return v;
}

/** A directory rlsight can serve: it exists and holds dumps or telemetry. */
export function checkRunDir(dir: string): string {
  const abs = resolve(dir);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new UsageError(`--dump-details: no such directory: ${dir}`);
  }
  if (!isDir) throw new UsageError(`--dump-details: not a directory: ${dir}`);
  const markers = ['dashboard', 'rollout_data', 'train_data', 'dashboard_columns'];
  if (!markers.some((m) => existsSync(join(abs, m)))) {
    throw new UsageError(`--dump-details: ${dir} is not a run directory (no ${markers.join('/, ')}/ inside)`);
  }
  return abs;
}

export function parseServeFlags(argv: string[]): ServeFlags {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      'dump-details': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      follow: { type: 'boolean' },
      'tensor-lru': { type: 'string' },
      'cache-dir': { type: 'string' },
      'memory-budget': { type: 'string' },
      'use-utilization-overview': { type: 'boolean' },
      'low-mfu-threshold': { type: 'string' },
      'allow-host': { type: 'string', multiple: true },
      'health-config': { type: 'string' },
      prometheus: { type: 'string' },
    },
  });
  if (!values['dump-details']) throw new UsageError('--dump-details DIR is required');
  return {
    dumpDetails: checkRunDir(values['dump-details']),
    host: values.host ?? '127.0.0.1',
    port: numberFlag('port', values.port, 7788, { int: true, min: 0, max: 65535 }),
    follow: values.follow ?? false,
    tensorLru: numberFlag('tensor-lru', values['tensor-lru'], 2, { int: true, min: 0 }),
    cacheDir: values['cache-dir'] ? resolve(values['cache-dir']) : undefined,
    memoryBudgetMiB: numberFlag('memory-budget', values['memory-budget'], 192, { min: 16 }),
    useUtilizationOverview: values['use-utilization-overview'] ?? false,
    lowMfuThreshold: numberFlag('low-mfu-threshold', values['low-mfu-threshold'], 0.15, { min: 0 }),
    allowHosts: values['allow-host'] ?? [],
    healthConfig: values['health-config'],
    prometheus: values.prometheus,
  };
}

function banner(url: string, host: string, port: number): string {
  const local = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const lines = [
    `rlsight serving ${url}`,
    `from a laptop: ssh -N -L ${port}:${local}:${port} ${hostname()}   then open http://127.0.0.1:${port}/`,
  ];
  if (local !== host) lines.push(`listening on all interfaces: requests must name localhost or an --allow-host NAME in their Host header`);
  return lines.join('\n');
}

async function serve(flags: ServeFlags): Promise<void> {
  const { openRun } = await import('./server/run.ts');
  const { startServer } = await import('./server/listen.ts');
  const run = await openRun(flags.dumpDetails, { tensorLru: flags.tensorLru, cacheDir: flags.cacheDir, memoryBudget: flags.memoryBudgetMiB * 2 ** 20 }).catch((err: Error) => {
    // The reader refuses what it cannot serve (e.g. a cache dir inside the run): a usage problem.
    const param = (err as { param?: string }).param;
    throw param ? new UsageError(`--${param === 'cacheDir' ? 'cache-dir' : param}: ${err.message}`) : err;
  });
  const { loadHealthConfig } = await import('./commands/health.ts');
  const healthSignals = flags.healthConfig === undefined ? undefined : (() => {
    try {
      return loadHealthConfig(flags.healthConfig);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  })();
  const served = flags.prometheus ? await (await import('./server/prometheusRun.ts')).prometheusFor(run, flags.prometheus) : run;
  const server = await startServer(served, {
    healthSignals,
    host: flags.host,
    port: flags.port,
    follow: flags.follow,
    useUtilizationOverview: flags.useUtilizationOverview,
    lowMfu: flags.lowMfuThreshold,
    allowHosts: flags.allowHosts,
  });
  console.log(banner(server.url, flags.host, server.port));
  for (const w of run.warnings()) console.warn(`warning: ${w}`);
  const stop = (): void => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** Metrics-only steps before the demo's six detailed ones: ~200 steps of metrics, dumps for the last six. */
const DEMO_HISTORY_STEPS = 194;

async function demo(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      out: { type: 'string' },
      large: { type: 'boolean' },
    },
  });
  const out = values.out ? resolve(values.out) : join(mkdtempSync(join(tmpdir(), 'rlsight-demo-')), 'run');
  const { generateDemoRun } = await import('./demo/index.ts');
  console.log(`generating a ${values.large ? 'large ' : ''}demo run in ${out} …`);
  await generateDemoRun(out, { large: values.large ?? false, historySteps: DEMO_HISTORY_STEPS });
  const flags = ['--dump-details', out];
  if (values.host !== undefined) flags.push('--host', values.host);
  if (values.port !== undefined) flags.push('--port', values.port);
  await serve(parseServeFlags(flags));
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    }
    if (rest.includes('--help') || rest.includes('-h')) {
      process.stdout.write(USAGE);
      return 0;
    }
    if (command === 'collect') return await (await import('./collect/command.ts')).collectCommand(rest);
    if (command === 'prometheus-config') return await (await import('./collect/prometheusConfig.ts')).prometheusConfigCommand(rest);
    if (command === 'health') return await (await import('./commands/health.ts')).healthCommand(rest);
    if (command === 'search') return await (await import('./commands/search.ts')).searchCommand(rest);
    if (command === 'export') return await (await import('./commands/export.ts')).exportCommand(rest);
    if (command === 'serve' && (await import('./commands/serveSlime.ts')).isSlimeServe(rest)) return await (await import('./commands/serveSlime.ts')).serveSlime(rest);
    if (command === 'serve') await serve(parseServeFlags(rest));
    else if (command === 'demo') await demo(rest);
    else if (command === 'trace') return await (await import('./commands/trace.ts')).traceCommand(rest);
    else throw new UsageError(`unknown command '${command}' (expected serve, demo, trace, collect, prometheus-config, health, search or export; see --help)`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as NodeJS.ErrnoException)?.code?.startsWith?.('ERR_PARSE_ARGS')) {
      console.error(`rlsight: ${(err as Error).message}`);
      return 2;
    }
    if ((err as NodeJS.ErrnoException)?.code === 'EADDRINUSE') {
      console.error(`rlsight: port already in use (${(err as Error).message}); pick another with --port`);
      return 2;
    }
    console.error(`rlsight: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
if (code !== 0) process.exit(code);
