// A running collector: the writer, its HTTP listener, the flush timer and `collector.json`.
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { serve } from '@hono/node-server';
import { COLLECTOR_FILE } from '../formats/dashboard/layout.ts';
import { zstdCompressor } from '../formats/zstd.ts';
import { Collector, EXTERNAL_ENGINE_MAX_AGE_S, stderrLogger, type CollectorOptions } from './collector.ts';
import { collectorAnswers, collectorFileText, newToken, readCollectorFile, type CollectorInfo } from './collectorFile.ts';
import { DashboardWriter } from '../formats/dashboard/writer.ts';
import { collectorRegistry } from './exposition.ts';
import { createCollectorApp } from './http.ts';
import { TensorBoardTail } from './tensorboardTail.ts';

/** Seconds between reads of a `--tensorboard` logdir. */
const TENSORBOARD_POLL_S = 2;
import { DEFAULT_SCRAPE_INTERVAL_S, engineValueMaxAgeS, SglangScraper, type FetchText } from './sglangScraper.ts';

export interface CollectorServiceOptions extends CollectorOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  flushIntervalS?: number;
  maxBatchBytes?: number;
  /** The host producers should dial (default: the listen host, or this machine's first IPv4 when listening on all interfaces). */
  advertiseHost?: string;
  /** Fixed token (tests); default a fresh random one. */
  token?: string;
  /** SGLang engine scraping (off when absent). */
  sglang?: ScrapeSettings;
  /** A TensorBoard logdir whose scalars are recorded as metrics while it grows. */
  tensorboard?: string;
}


export interface ScrapeSettings {
  /** Router base URL (`http://host:port`); router mode needs it, a producer may also name it later. */
  router?: string;
  mode: 'auto' | 'router' | 'direct';
  intervalS: number;
  /** Replaces the default metric whitelist. */
  whitelist?: string[];
  /** HTTP GET used for scraping (tests count calls). */
  get?: FetchText;
}

export interface CollectorService {
  collector: Collector;
  scraper: SglangScraper | null;
  /** `http://host:port` as written to `collector.json`. */
  address: string;
  port: number;
  token: string;
  close(): Promise<boolean>;
}

/** The address other nodes reach this one at: the first non-internal IPv4, else loopback. */
function routableHost(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

/** Another collector still writes the run directory (it answers at the address its collector.json gives). */
export class CollectorAlreadyRunning extends Error {}

/** Whether process `pid` of this machine is an `rlsight collect` (its address may not be reachable from here). */
function collectProcessHere(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return args.includes('collect') && args.some((a) => a.includes('rlsight'));
  } catch {
    return false;
  }
}

/** The collector that still writes `dashboardDir`, or null when none does (no collector.json, or what it names is gone). */
async function runningCollector(dashboardDir: string): Promise<CollectorInfo | null> {
  let info: CollectorInfo;
  try {
    info = readCollectorFile(dashboardDir);
  } catch {
    return null; // none, or a damaged one: replaced below
  }
  return (await collectorAnswers(info)) || collectProcessHere(info.pid) ? info : null;
}

export async function startCollectorService(opts: CollectorServiceOptions): Promise<CollectorService> {
  // Two collectors on one run would replay and cut each other's write-ahead log, and the second would take
  // collector.json from the first's producers.
  const running = await runningCollector(opts.dashboardDir);
  if (running !== null) {
    throw new CollectorAlreadyRunning(`${opts.dashboardDir} is being written by the collector at ${running.address} (pid ${running.pid}); stop it first, or give another --dump-details`);
  }
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token ?? newToken();
  // Listen before the collector writes anything (meta.json): a busy port fails with the run folder untouched.
  let app: ReturnType<typeof createCollectorApp> | null = null;
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve(
      { fetch: (req, ...rest) => (app ? app.fetch(req, ...rest) : new Response('collector starting', { status: 503 })), hostname: host, port: opts.port ?? 7789 },
      () => resolve(s),
    );
    s.once('error', reject);
  });
  // an engine only the scraper knows leaves the topology once unseen for 3 scrape ticks or 30 s, whichever is
  // longer: long enough that a timeout or two does not read as a restart
  const externalEngineMaxAgeS = Math.max(EXTERNAL_ENGINE_MAX_AGE_S, 3 * (opts.sglang?.intervalS ?? DEFAULT_SCRAPE_INTERVAL_S));
  const collector = new Collector({ writeAheadLog: true, zstd: await zstdCompressor(), externalEngineMaxAgeS, ...opts });
  const log = opts.log ?? stderrLogger;
  const scraper =
    opts.sglang === undefined
      ? null
      : new SglangScraper({
          mode: opts.sglang.mode,
          routerAddr: opts.sglang.router,
          engineAddrs: () => collector.engineAddrs(),
          // auto mode reads the router until a producer reports engines (not the ones the router revealed)
          reportedEngines: () => collector.reportedEngineAddrs(),
          intervalS: opts.sglang.intervalS,
          whitelist: opts.sglang.whitelist,
          sink: (record, line) => collector.takeOwn('engine_series', { record, line }),
          failed: (addr) => collector.engineScrapeFailed(addr),
          log,
          now: opts.now,
          get: opts.sglang.get,
        });
  const setRouter = (addr: string): void => {
    if (scraper === null || scraper.routerAddr === addr) return;
    scraper.routerAddr = addr;
    log('info', `sglang router is ${addr}; scraping in ${scraper.mode} mode`);
  };
  // an engine missing three scrape ticks in a row is no longer shown as running anything
  const registry = collectorRegistry(collector, { engineMaxAgeS: engineValueMaxAgeS(opts.sglang?.intervalS), now: opts.now });
  const metrics = async () => ({ text: await registry.metrics(), contentType: registry.contentType });
  const status = { pid: process.pid, started_ts: Date.now() / 1000 };
  app = createCollectorApp(collector, { token, maxBatchBytes: opts.maxBatchBytes, setRouter, metrics, status });
  const port = (server.address() as AddressInfo).port;
  const shownHost = opts.advertiseHost ?? (host === '0.0.0.0' || host === '::' ? routableHost() : host);
  const address = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${port}`;
  const writer = new DashboardWriter(opts.dashboardDir, opts.fs);
  writer.replace(COLLECTOR_FILE, collectorFileText({ address, token, ...status }), 0o600);
  collector.start(opts.flushIntervalS ?? 5);
  scraper?.start();
  const tensorboard = opts.tensorboard === undefined ? null : new TensorBoardTail(opts.tensorboard, opts.dashboardDir, (record, line) => collector.takeOwn('metrics', { record, line }), log);
  tensorboard?.start(TENSORBOARD_POLL_S);
  let closed: Promise<boolean> | null = null;
  return {
    collector,
    scraper,
    address,
    port,
    token,
    close: () =>
      (closed ??= new Promise<boolean>((resolve) => {
        (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
        server.close(async () => {
          await scraper?.stop();
          tensorboard?.stop();
          const ok = collector.close();
          writer.remove(COLLECTOR_FILE);
          resolve(ok);
        });
      })),
  };
}
