// The rlsight command line: usage and dispatch; each command lives in src/commands/.
import { COLLECT_USAGE } from './collect/usage.ts';
import { CommandUsageError, quietWhenStdoutCloses } from './commands/common.ts';

const USAGE = `rlsight — observability for LLM RL post-training runs

Usage:
  rlsight serve DIR [DIR...] [options]         serve run directories (read-only; miles, slime or collected, side by side); the first answers /api/…
  rlsight serve --runs ROOT [options]          serve every run directory under ROOT (searched again with --follow)
  rlsight serve --dump-details DIR [options]   serve one run directory, as miles spells it
  rlsight serve FILE.pt|'GLOB' [options]       serve slime --save-debug-rollout-data files
  rlsight demo [--port N] [--out DIR] [--large]  generate two demo runs (healthy, collapse) and serve both
  rlsight trace FILE.pt [--out DIR] [--no-serve]  slime viewer cache + a self-contained trace page
  rlsight health DIR [--fail-on SIGNAL,...] [--health-config FILE] [--json]
                                               per-step failure signals; exit 1 when a --fail-on signal fired
  rlsight search DIR QUERY [--limit N] [--cache-dir DIR]
                                               one JSON line per matching sample; QUERY: words, "a phrase",
                                               /regex/, a request or trace id, a sample index or step:sample
  rlsight export metrics DIR [--tensorboard LOGDIR] --format csv|parquet --out FILE   every key, one row per step key and step
  rlsight export rollout DIR --step N [--eval] --format csv|parquet --out FILE
  rlsight export tensorboard DIR [--tensorboard LOGDIR] --out LOGDIR   events.out.tfevents.* scalars
  rlsight export perfetto DIR [--t0 T --t1 T] --out FILE   Chrome trace-event JSON for ui.perfetto.dev
  rlsight export telemetry DIR --format parquet --out DIR2   telemetry as Hive-partitioned Parquet (zstd)
  rlsight collect --dump-details DIR [--listen HOST:PORT] [...]    receive live telemetry (see collect options)
  rlsight prometheus-config --router HOST:PORT [--collector HOST:PORT]   print a prometheus.yml for both
  rlsight --help

  health, search and export take the run as serve does: DIR, --dump-details DIR, or slime dump files as FILE.pt or a quoted 'GLOB'.

serve options:
  --dump-details DIR            a run's --dump-details directory (as a DIR argument; repeatable)
  --runs ROOT                   every run directory under ROOT, each at /api/runs/{name}/…
  --host HOST                   bind address (default 127.0.0.1)
  --port N                      port (default 7788)
  --follow                      tail a running job every 2 s and push changes to the app
  --tensor-lru N                at most N rollout steps' records kept decoded (default: as many as fit in 32 MiB)
  --cache-dir DIR               where derived caches may be written (default: a folder per run under
                                $RLSIGHT_CACHE_DIR, $XDG_CACHE_HOME/rlsight or ~/.cache/rlsight)
  --no-cache                    keep derived data in memory only (no warm-up)
  --memory-budget MIB           MiB the resident telemetry columns of each run may hold (default 160)
  --use-utilization-overview    always show the fleet overview instead of per-GPU lanes
  --low-mfu-threshold X         MFU advisory threshold, 0 disables (default 0.15)
  --allow-host NAME             also answer requests for this Host name (repeatable)
  --prometheus URL              engine series from this Prometheus when the run scraped none
  --tensorboard LOGDIR          the trainer's TensorBoard scalars (events.out.tfevents.*) among the metrics
  --eval-datasets A,B           slime runs only: the eval datasets' names, in dump order
  --health-config FILE          health-board thresholds (JSON: {"signal": {"warn": x, "fire": y}})

${COLLECT_USAGE}

demo options:
  --port N                      port (default 7788)
  --host HOST                   bind address (default 127.0.0.1)
  --out DIR                     where to write the runs (DIR/healthy, DIR/collapse; default: a new temp folder)
  --large                       128 GPUs, so the fleet overview is exercised
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // `rlsight … | head` ends quietly, whichever command printed
  quietWhenStdoutCloses();
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    }
    if (rest.includes('--help') || rest.includes('-h')) {
      process.stdout.write(USAGE);
      return 0;
    }
    if (command === 'collect') return await (await import('./commands/collect.ts')).collectCommand(rest);
    if (command === 'prometheus-config') return await (await import('./commands/prometheusConfig.ts')).prometheusConfigCommand(rest);
    if (command === 'health') return await (await import('./commands/health.ts')).healthCommand(rest);
    if (command === 'search') return await (await import('./commands/search.ts')).searchCommand(rest);
    if (command === 'export') return await (await import('./commands/export.ts')).exportCommand(rest);
    if (command === 'serve' && (await import('./commands/serveDumpFiles.ts')).isDumpFilesServe(rest)) return await (await import('./commands/serveDumpFiles.ts')).serveDumpFiles(rest);
    if (command === 'serve') {
      const { parseServeFlags, serve } = await import('./commands/serve.ts');
      await serve(parseServeFlags(rest));
    } else if (command === 'demo') await (await import('./commands/demo.ts')).demo(rest);
    else if (command === 'trace') return await (await import('./commands/trace.ts')).traceCommand(rest);
    else throw new CommandUsageError(`unknown command '${command}' (expected serve, demo, trace, collect, prometheus-config, health, search or export; see --help)`);
    return 0;
  } catch (err) {
    if (err instanceof CommandUsageError || (err as NodeJS.ErrnoException)?.code?.startsWith?.('ERR_PARSE_ARGS')) {
      console.error(`rlsight: ${(err as Error).message}`);
      return 2;
    }
    const code = (err as NodeJS.ErrnoException)?.code;
    if ((command === 'serve' || command === 'demo') && (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EADDRNOTAVAIL')) {
      // (serve says so before reading any run; this is what is met later, or by another way in)
      console.error(`rlsight: --host: cannot listen there (${(err as Error).message})`);
      return 2;
    }
    if (code === 'EADDRINUSE') {
      console.error(`rlsight: port already in use (${(err as Error).message}); pick another with ${command === 'collect' ? '--listen HOST:PORT' : '--port'}`);
      return 2;
    }
    console.error(`rlsight: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
if (code !== 0) process.exit(code);
