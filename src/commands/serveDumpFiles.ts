// `rlsight serve FILE.pt|GLOB`: the slime rollout dumps a `--save-debug-rollout-data` template wrote, served
// as one run. A run directory of any format (slime's `--dump-details DIR` layout included) is `serve DIR`.
import { parseArgs } from 'node:util';
import { checkListen, CommandUsageError, hostFlag, numberFlag, parseFlags, portFlag, terminalSafe } from './common.ts';
import { answersOver, openDumpFilesRun } from './openRun.ts';
import { namesDumpFiles } from './runPaths.ts';
import { allowHostFlag, evalDatasetsFlag, prometheusFlag, warnEvalDatasetsMismatch, ROLLOUT_NUM_GPUS_REFUSED, SERVE_OPTIONS } from './serve.ts';
import { startServer } from '../server/listen.ts';

/**
 * `serve` options with nothing to act on in dump files, and why: refused (exit 2) rather than ignored. The
 * others mean what they mean for `serve DIR` (`--follow` finds the files the glob matches as they are written).
 */
const NOT_FOR_DUMP_FILES: Partial<Record<keyof typeof SERVE_OPTIONS, string>> = {
  'cache-dir': 'dump files are read into memory and keep no cache',
  'tensor-lru': 'dump files are kept decoded whole, a few steps at a time, not by --tensor-lru',
  'memory-budget': 'it bounds the resident telemetry columns of a run, and dump files have no telemetry',
  tensorboard: "a TensorBoard logdir is read beside a run directory: serve DIR --tensorboard LOGDIR (slime's --dump-details DIR layout is one)",
};

/**
 * Whether these `serve` arguments name dump files (a .pt file or glob) rather than run directories. Every serve
 * option is known here: the value of an option unknown here would be taken for a positional (`--memory-budget
 * 128` for a run named `128`).
 */
export function isDumpFilesServe(argv: string[]): boolean {
  const { positionals } = parseArgs({ args: argv, strict: false, allowPositionals: true, options: SERVE_OPTIONS });
  // Run folders of any format (`serve DIR [DIR...]`, slime's layout included) are the multi-run serve; so is
  // a name that is nothing yet (a mistyped folder is reported as a missing run directory, not a missing dump)
  return positionals.some(namesDumpFiles);
}

/** A usage problem of `serve FILE.pt|GLOB` (exit 2). */
export class DumpFilesServeError extends CommandUsageError {}

export async function serveDumpFiles(argv: string[]): Promise<number> {
  // every option `serve` documents is known, so none is called unknown; those that do not apply say so below
  const { values, positionals } = parseFlags({ args: argv, allowPositionals: true, options: SERVE_OPTIONS });
  const runDirs = positionals.filter((p) => !namesDumpFiles(p));
  if (runDirs.length > 0 || values['dump-details'] !== undefined || values.runs !== undefined) {
    const other = runDirs.length > 0 ? `the run directory ${runDirs[0]}` : values.runs !== undefined ? `--runs ${values.runs}` : `--dump-details ${values['dump-details']![0]}`;
    throw new DumpFilesServeError(`serve: slime dump files (FILE.pt|GLOB) cannot be mixed with run directories (here ${other}): serve them on their own, and the run in a second server (another --port)`);
  }
  if (positionals.length > 1) {
    throw new DumpFilesServeError(`serve: give one FILE.pt or one quoted GLOB, not ${positionals.length} files (an unquoted glob is expanded by the shell: quote it, as in 'dir/rollout_*.pt')`);
  }
  for (const [flag, why] of Object.entries(NOT_FOR_DUMP_FILES)) {
    if ((values as Record<string, unknown>)[flag] !== undefined) throw new DumpFilesServeError(`--${flag}: does not apply when serving dump files (FILE.pt|GLOB): ${why}`);
  }
  if (values['rollout-num-gpus'] !== undefined) throw new DumpFilesServeError(ROLLOUT_NUM_GPUS_REFUSED);
  const port = portFlag(values.port);
  const host = hostFlag(values.host);
  const prometheus = prometheusFlag(values.prometheus);
  const allowHosts = allowHostFlag(values['allow-host']);
  const evalDatasetNames = evalDatasetsFlag(values['eval-datasets']);
  await checkListen(host, port);
  const lowMfu = numberFlag('low-mfu-threshold', values['low-mfu-threshold'], 0.15, { min: 0 });
  const { loadHealthConfig } = await import('./health.ts');
  const healthSignals = values['health-config'] === undefined ? undefined : loadHealthConfig(values['health-config']);
  const spec = positionals[0];
  const opened = await openDumpFilesRun(spec);
  // the spec names no file, or no dump: a usage error like a missing run directory
  if ('problem' in opened) throw new DumpFilesServeError(`serve: ${opened.problem}`);
  const { model, ids } = opened;
  const served = answersOver(model, {
    // slime keeps SGLang's serving metrics in Prometheus: `--prometheus URL` brings them in as engine series.
    prometheus,
    slime: { evalDatasetNames },
  });
  const server = await startServer(served, {
    host,
    port,
    follow: values.follow ?? false,
    allowHosts,
    useUtilizationOverview: values['use-utilization-overview'] ?? false,
    lowMfu,
    healthSignals,
  });
  console.log(`rlsight serving ${server.url}  (slime run: ${ids.train.length} rollout and ${ids.eval.length} eval dumps)`);
  for (const w of model.warnings()) console.warn(`warning: ${terminalSafe(w)}`);
  if (evalDatasetNames !== undefined) warnEvalDatasetsMismatch(model, evalDatasetNames);
  await new Promise<void>((done) => {
    const stop = (): void => void server.close().then(done);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}
