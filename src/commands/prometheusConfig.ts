// `rlsight prometheus-config --router HOST:PORT [--collector HOST:PORT]`: a prometheus.yml that
// scrapes the SGLang router's aggregated engine metrics and the collector's own /metrics.
import { CommandUsageError, parseFlags } from './common.ts';
import { parseHostPort } from './collect.ts';

export interface PrometheusTargets {
  router?: string;
  collector?: string;
  scrapeIntervalS?: number;
}

const hostPort = (t: { host: string; port: number }): string => `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;

export function prometheusConfig(t: PrometheusTargets): string {
  const interval = `${t.scrapeIntervalS ?? 5}s`;
  const job = (name: string, path: string, target: string) => [`  - job_name: ${name}`, `    metrics_path: ${path}`, `    static_configs:`, `      - targets: ['${target}']`];
  const lines = ['# prometheus.yml written by rlsight prometheus-config', 'global:', `  scrape_interval: ${interval}`, `  evaluation_interval: ${interval}`, 'scrape_configs:'];
  if (t.router) lines.push(...job('sglang-router', '/engine_metrics', t.router));
  if (t.collector) lines.push(...job('rlsight-collector', '/metrics', t.collector));
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
    const router = hostPort(parseHostPort('router', values.router.replace(/^https?:\/\//, '')));
    const collector = hostPort(parseHostPort('collector', (values.collector ?? '127.0.0.1:7789').replace(/^https?:\/\//, '')));
    process.stdout.write(prometheusConfig({ router, collector, scrapeIntervalS: interval }));
    return 0;
  } catch (err) {
    if (err instanceof CommandUsageError || (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`rlsight prometheus-config: ${(err as Error).message}`);
      return 2;
    }
    throw err;
  }
}
