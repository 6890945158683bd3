// `rlsight collect --dump-details DIR …`: run the collector until SIGINT/SIGTERM, then flush and exit.
import { resolve, join } from 'node:path';
import { existsSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { CommandUsageError, flagValues, isHostName, numberFlag, portIsFree } from './common.ts';
import { COLLECTOR_FILE, DASHBOARD_DIR } from '../formats/dashboard/layout.ts';
import { DEFAULT_BUFFER_CAP, DEFAULT_MAX_BATCH_BYTES } from '../collect/usage.ts';
import { makeDirs } from '../formats/dashboard/writer.ts';
import { CollectorAlreadyRunning, startCollectorService } from '../collect/service.ts';

export interface CollectFlags {
  dumpDetails: string;
  host: string;
  port: number;
  advertiseHost?: string;
  flushIntervalS: number;
  runName?: string;
  bufferCap: number;
  maxBatchBytes: number;
  sglangRouter?: string;
  scrapeMode: 'auto' | 'router' | 'direct';
  scrapeIntervalS: number;
  sglangMetrics?: string[];
  tensorboard?: string;
}

/** `HOST:PORT`, `[v6]:PORT` or `:PORT`. */
export function parseHostPort(flag: string, raw: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(raw);
  const port = m ? Number(m[3]) : NaN;
  if (m === null || port > 65535) throw new CommandUsageError(`--${flag}: expected HOST:PORT, got '${raw}'`);
  const host = m[1] ?? (m[2] || '127.0.0.1');
  if (!isHostName(host, m[1] !== undefined)) throw new CommandUsageError(`--${flag}: '${host}' is not a host name or address`);
  return { host, port };
}

function usage(message: string): never {
  throw new CommandUsageError(message);
}

/** `--advertise HOST`: the host other machines reach the collector at (written into collector.json). */
function advertised(raw: string): string {
  const host = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw;
  if (!isHostName(host, host !== raw || host.includes(':'))) usage(`--advertise: expected the host name or address other machines reach this one at, got '${raw}'`);
  // bare: the collector puts an IPv6 address in brackets itself
  return host;
}

export function parseCollectFlags(argv: string[]): CollectFlags {
  const values = flagValues(argv, {
    'dump-details': { type: 'string' },
    listen: { type: 'string' },
    advertise: { type: 'string' },
    'flush-interval': { type: 'string' },
    'run-name': { type: 'string' },
    'buffer-cap': { type: 'string' },
    'max-batch-bytes': { type: 'string' },
    'sglang-router': { type: 'string' },
    'sglang-scrape-mode': { type: 'string' },
    'sglang-scrape-interval': { type: 'string' },
    'sglang-metrics': { type: 'string' },
    tensorboard: { type: 'string' },
  });
  if (!values['dump-details']) throw new CommandUsageError('--dump-details DIR is required');
  const listen = parseHostPort('listen', values.listen ?? '127.0.0.1:7789');
  const mode = values['sglang-scrape-mode'] ?? 'auto';
  if (mode !== 'auto' && mode !== 'router' && mode !== 'direct') throw new CommandUsageError(`--sglang-scrape-mode: expected auto, router or direct, got '${mode}'`);
  const router = values['sglang-router'];
  if (router !== undefined && !/^https?:\/\/[^\s/]+\/?$/.test(router)) throw new CommandUsageError(`--sglang-router: expected http://HOST:PORT, got '${router}'`);
  const metrics = values['sglang-metrics']?.split(',').map((m) => m.trim()).filter((m) => m !== '');
  if (metrics !== undefined && metrics.length === 0) throw new CommandUsageError('--sglang-metrics: name at least one metric');
  return {
    dumpDetails: resolve(values['dump-details']),
    host: listen.host,
    port: listen.port,
    advertiseHost: values.advertise === undefined ? undefined : advertised(values.advertise),
    flushIntervalS: numberFlag('flush-interval', values['flush-interval'], 5, { min: 0.05 }),
    runName: values['run-name'] === undefined || values['run-name'].trim() !== '' ? values['run-name'] : usage('--run-name: expected a name, got an empty value'),
    bufferCap: numberFlag('buffer-cap', values['buffer-cap'], DEFAULT_BUFFER_CAP, { int: true, min: 1 }),
    maxBatchBytes: numberFlag('max-batch-bytes', values['max-batch-bytes'], DEFAULT_MAX_BATCH_BYTES, { int: true, min: 1024 }),
    sglangRouter: router?.replace(/\/$/, ''),
    scrapeMode: mode,
    scrapeIntervalS: numberFlag('sglang-scrape-interval', values['sglang-scrape-interval'], 2, { min: 0.1 }),
    sglangMetrics: metrics,
    tensorboard: values.tensorboard === undefined ? undefined : tensorboardLogdir(values.tensorboard),
  };
}

/** `--tensorboard LOGDIR`: a folder, or a path the trainer has not created yet (read once it appears); never a file. */
function tensorboardLogdir(raw: string): string {
  const dir = resolve(raw);
  if (existsSync(dir) && !statSync(dir).isDirectory()) throw new CommandUsageError(`--tensorboard: ${raw} is not a directory`);
  return dir;
}

/** Why the collector could not write in `dir` (created if missing), or null when it can: checked before anything starts. */
function writeProblem(dir: string): string | null {
  const probe = join(dir, `.write-check-${process.pid}`);
  try {
    makeDirs(dir);
    writeFileSync(probe, '');
    unlinkSync(probe);
    return null;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return e.code ? `${e.code} (${e.message})` : String(e.message);
  }
}

/** Runs until SIGINT/SIGTERM; exit code 0 when the final flush wrote everything, 1 otherwise. */
export async function collectCommand(argv: string[]): Promise<number> {
  let flags: CollectFlags;
  try {
    flags = parseCollectFlags(argv);
  } catch (err) {
    if (err instanceof CommandUsageError || (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`rlsight collect: ${(err as Error).message}`);
      return 2;
    }
    throw err;
  }
  // a busy port fails before the write check creates the run folder: DIR stays untouched; so does an
  // address this machine cannot listen on (a name that does not resolve, an address not its own)
  try {
    await portIsFree(flags.host, flags.port);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EADDRNOTAVAIL') {
      console.error(`rlsight collect: --listen: cannot listen on ${flags.host}:${flags.port} (${code === 'EADDRNOTAVAIL' ? 'not an address of this machine' : 'the name does not resolve'})`);
      return 2;
    }
    throw err;
  }
  const dashboardDir = join(flags.dumpDetails, DASHBOARD_DIR);
  const unwritable = writeProblem(dashboardDir);
  if (unwritable !== null) {
    console.error(`rlsight collect: cannot write ${dashboardDir}: ${unwritable}`);
    return 2;
  }
  let service: Awaited<ReturnType<typeof startCollectorService>>;
  try {
    service = await startCollectorService({
      dashboardDir,
      host: flags.host,
      port: flags.port,
      advertiseHost: flags.advertiseHost,
      flushIntervalS: flags.flushIntervalS,
      runName: flags.runName,
      bufferCap: flags.bufferCap,
      maxBatchBytes: flags.maxBatchBytes,
      tensorboard: flags.tensorboard,
      sglang: { router: flags.sglangRouter, mode: flags.scrapeMode, intervalS: flags.scrapeIntervalS, whitelist: flags.sglangMetrics },
    });
  } catch (err) {
    if (!(err instanceof CollectorAlreadyRunning)) throw err;
    console.error(`rlsight collect: ${err.message}`);
    return 2;
  }
  console.log(`rlsight collect: writing ${dashboardDir}`);
  console.log(`listening on ${service.address} (address and token in ${join(dashboardDir, COLLECTOR_FILE)})`);
  console.log(`view live: rlsight serve --dump-details ${flags.dumpDetails} --follow`);
  if (flags.tensorboard !== undefined && !existsSync(flags.tensorboard)) console.log(`--tensorboard: ${flags.tensorboard} does not exist yet; its event files are read once it does`);
  return await new Promise<number>((done) => {
    const stop = (signal: string): void => {
      console.log(`rlsight collect: ${signal}, flushing and stopping`);
      void service.close().then((ok) => done(ok ? 0 : 1));
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}
