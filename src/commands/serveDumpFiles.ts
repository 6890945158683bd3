// `rlsight serve FILE.pt|GLOB`: the slime rollout dumps a `--save-debug-rollout-data` template wrote, served
// as one run. A run directory of any format (slime's `--dump-details DIR` layout included) is `serve DIR`.
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { cacheDirFlag, CommandUsageError, intFlag, numberFlag, parseFlags, portFlag, terminalSafe } from './common.ts';
import { answersOver } from './openRun.ts';
import { SERVE_OPTIONS } from './serve.ts';
import { openDumpFiles } from '../run/open.ts';
import { startServer } from '../server/listen.ts';

const OPTIONS = {
  'dump-details': { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  follow: { type: 'boolean' },
  'allow-host': { type: 'string', multiple: true },
  'rollout-num-gpus': { type: 'string' },
  'eval-datasets': { type: 'string' },
  'tensor-lru': { type: 'string' },
  'cache-dir': { type: 'string' },
  // accepted for a command line written for `serve DIR`: dump files are served from memory either way
  'no-cache': { type: 'boolean' },
  'use-utilization-overview': { type: 'boolean' },
  'low-mfu-threshold': { type: 'string' },
  prometheus: { type: 'string' },
} as const;

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Every option `serve` takes, slime's or not: the value of an option unknown here would be taken for a
 * positional (`--memory-budget 128` for a run named `128`).
 */
const ANY_SERVE_OPTIONS = { ...OPTIONS, ...SERVE_OPTIONS };

/** Whether these `serve` arguments name dump files (a .pt file or glob) rather than run directories. */
export function isDumpFilesServe(argv: string[]): boolean {
  const { positionals } = parseArgs({ args: argv, strict: false, allowPositionals: true, options: ANY_SERVE_OPTIONS });
  // Run folders of any format (`serve DIR [DIR...]`, slime's layout included) are the multi-run serve; so is
  // a name that is nothing yet (a mistyped folder is reported as a missing run directory, not a missing dump)
  return positionals.some((p) => !isDirectory(p) && (isFile(p) || /[*?[]/.test(p) || p.endsWith('.pt')));
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** A usage problem of `serve FILE.pt|GLOB` (exit 2). */
export class DumpFilesServeError extends CommandUsageError {}

export async function serveDumpFiles(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({ args: argv, allowPositionals: true, options: OPTIONS });
  if (positionals.length > 1) throw new DumpFilesServeError('serve: give one FILE.pt or one quoted GLOB');
  if (positionals.length === 1 && values['dump-details']) throw new DumpFilesServeError('serve: give either --dump-details DIR or FILE.pt|GLOB, not both');
  const spec = positionals[0];
  const model = openDumpFiles(spec);
  const ids = await model.rolloutIds();
  if (ids.train.length + ids.eval.length === 0) throw new DumpFilesServeError(`serve: no slime rollout dump in ${spec}${model.warnings().length ? ` (${model.warnings()[0]})` : ''}`);
  const gpus = values['rollout-num-gpus'] === undefined ? undefined : numberFlag('rollout-num-gpus', values['rollout-num-gpus'], 0, { int: true, min: 1 });
  // accepted for a command line written for `serve DIR` (dump files are served from memory), but checked
  intFlag(values['tensor-lru'], 'tensor-lru');
  cacheDirFlag(values['cache-dir']);
  const port = portFlag(values.port);
  const served = answersOver(model, {
    // slime keeps SGLang's serving metrics in Prometheus: `--prometheus URL` brings them in as engine series.
    prometheus: values.prometheus,
    slime: { rolloutNumGpus: gpus, evalDatasetNames: values['eval-datasets']?.split(',').map((s) => s.trim()).filter(Boolean) },
  });
  const host = values.host ?? '127.0.0.1';
  const server = await startServer(served, { host, port, follow: values.follow ?? false, allowHosts: (values['allow-host'] as string[] | undefined) ?? [] });
  console.log(`rlsight serving ${server.url}  (slime run: ${ids.train.length} rollout and ${ids.eval.length} eval dumps)`);
  for (const w of model.warnings()) console.warn(`warning: ${terminalSafe(w)}`);
  await new Promise<void>((done) => {
    const stop = (): void => void server.close().then(done);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}
