// `rlsight prometheus-config --router HOST:PORT [--collector HOST:PORT]`: a prometheus.yml that
// scrapes the SGLang router's aggregated engine metrics and the collector's own /metrics.
import { CommandUsageError, parseFlags } from './common.ts';
import { parseHostPort } from './collect.ts';

export interface PrometheusTargets {
  router?: string;
  collector?: string;
  scrapeIntervalS?: number;
  /** Scraped over https (the flag was given as `https://HOST:PORT`). */
  routerHttps?: boolean;
  collectorHttps?: boolean;
}

const hostPort = (t: { host: string; port: number }): string => `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;

/** Seconds as a Prometheus duration, which takes whole units only (`2s`, `500ms`). */
export function promDuration(seconds: number): string {
  if (Number.isInteger(seconds)) return `${seconds}s`;
  const ms = Math.round(seconds * 1000);
  if (ms < 1 || Math.abs(ms - seconds * 1000) > 1e-6) throw new CommandUsageError(`--scrape-interval: ${seconds} s is not a whole number of milliseconds, as Prometheus takes`);
  return `${ms}ms`;
}

export function prometheusConfig(t: PrometheusTargets): string {
  const interval = promDuration(t.scrapeIntervalS ?? 5);
  const job = (name: string, path: string, target: string, https: boolean | undefined) => [
    `  - job_name: ${name}`,
    `    metrics_path: ${path}`,
    ...(https ? ['    scheme: https'] : []),
    `    static_configs:`,
    `      - targets: [${JSON.stringify(target)}]`,
  ];
  const lines = ['# prometheus.yml written by rlsight prometheus-config', 'global:', `  scrape_interval: ${interval}`, `  evaluation_interval: ${interval}`, 'scrape_configs:'];
  if (t.router) lines.push(...job('sglang-router', '/engine_metrics', t.router, t.routerHttps));
  if (t.collector) lines.push(...job('rlsight-collector', '/metrics', t.collector, t.collectorHttps));
  return lines.join('\n') + '\n';
}

export async function prometheusConfigCommand(argv: string[]): Promise<number> {
  try {
    const { values } = parseFlags({
      args: argv,
      allowPositionals: false,
      options: { router: { type: 'string' }, collector: { type: 'string' }, 'scrape-interval': { type: 'string' } },
    });
    if (!values.router) throw new CommandUsageError('--router HOST:PORT is required');
    const interval = values['scrape-interval'] === undefined ? 5 : Number(values['scrape-interval']);
    if (!Number.isFinite(interval) || interval <= 0) throw new CommandUsageError(`--scrape-interval: expected seconds > 0, got '${values['scrape-interval']}'`);
    // `http://` is what Prometheus does by default; `https://` is kept as the job's scheme
    const target = (flag: string, raw: string) => ({ at: hostPort(parseHostPort(flag, raw.replace(/^https?:\/\//, '').replace(/\/$/, ''))), https: /^https:\/\//.test(raw) });
    const router = target('router', values.router);
    const collector = target('collector', values.collector ?? '127.0.0.1:7789');
    process.stdout.write(prometheusConfig({ router: router.at, collector: collector.at, scrapeIntervalS: interval, routerHttps: router.https, collectorHttps: collector.https }));
    return 0;
  } catch (err) {
    if (err instanceof CommandUsageError || (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`rlsight prometheus-config: ${(err as Error).message}`);
      return 2;
    }
    throw err;
  }
}
