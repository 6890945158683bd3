// A stand-in for an SGLang engine (and for the SGLang router's aggregation) on 127.0.0.1: serves
// `/metrics` in the text SGLang's prometheus_client exposition produces — `sglang:` names, HELP/TYPE
// lines, model/rank labels, histograms with `_sum`/`_bucket`/`_count`, `e+06` floats.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EngineState {
  /** Running requests per dp rank. */
  running: number[];
  queued: number;
  genThroughput: number;
  tokenUsage: number;
  cacheHitRate: number;
  promptTokens: number;
  generationTokens: number;
  ttftSum: number;
  ttftCount: number;
}

export function defaultEngineState(): EngineState {
  return { running: [16, 5], queued: 2, genThroughput: 2100.5, tokenUsage: 0.63, cacheHitRate: 0.71, promptTokens: 8128902, generationTokens: 7557572, ttftSum: 2351897.9474117756, ttftCount: 4096 };
}

const MODEL = 'Qwen/Qwen3-0.6B';

/** Python's repr of a float (prometheus_client prints floatToGoString(value)). */
function goFloat(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e6) return `${x}.0`;
  const s = String(x);
  return /e/.test(s) ? s.replace(/e([+-])(\d)$/, 'e$10$2') : Math.abs(x) >= 1e6 ? x.toExponential().replace(/e([+-])(\d)$/, 'e$10$2') : s;
}

/** The `/metrics` text of one engine. */
export function engineMetricsText(s: EngineState, engineType = 'unified'): string {
  const out: string[] = [];
  const family = (name: string, type: string, help: string): void => {
    out.push(`# HELP sglang:${name} ${help}`, `# TYPE sglang:${name} ${type}`);
  };
  family('num_running_reqs', 'gauge', 'The number of running requests.');
  s.running.forEach((r, dp) => out.push(`sglang:num_running_reqs{dp_rank="${dp}",engine_type="${engineType}",model_name="${MODEL}",pp_rank="0",tp_rank="0"} ${goFloat(r)}`));
  family('num_queue_reqs', 'gauge', 'The number of requests in the waiting queue.');
  s.running.forEach((_, dp) => out.push(`sglang:num_queue_reqs{dp_rank="${dp}",engine_type="${engineType}",model_name="${MODEL}",pp_rank="0",tp_rank="0"} ${goFloat(dp === 0 ? s.queued : 0)}`));
  family('gen_throughput', 'gauge', 'The generation throughput (token/s).');
  out.push(`sglang:gen_throughput{engine_type="${engineType}",model_name="${MODEL}",pp_rank="0",tp_rank="0"} ${goFloat(s.genThroughput)}`);
  family('token_usage', 'gauge', 'The token usage.');
  out.push(`sglang:token_usage{engine_type="${engineType}",model_name="${MODEL}",pp_rank="0",tp_rank="0"} ${goFloat(s.tokenUsage)}`);
  family('cache_hit_rate', 'gauge', 'The prefix cache hit rate.');
  out.push(`sglang:cache_hit_rate{engine_type="${engineType}",model_name="${MODEL}",pp_rank="0",tp_rank="0"} ${goFloat(s.cacheHitRate)}`);
  family('uptime_seconds', 'gauge', 'Seconds since the server started.');
  out.push(`sglang:uptime_seconds{model_name="${MODEL}"} 1234.5`);
  family('prompt_tokens_total', 'counter', 'Number of prefill tokens processed.');
  out.push(`sglang:prompt_tokens_total{model_name="${MODEL}"} ${goFloat(s.promptTokens)}`);
  family('generation_tokens_total', 'counter', 'Number of generation tokens processed.');
  out.push(`sglang:generation_tokens_total{model_name="${MODEL}"} ${goFloat(s.generationTokens)}`);
  family('time_to_first_token_seconds', 'histogram', 'Histogram of time to first token in seconds.');
  out.push(`sglang:time_to_first_token_seconds_sum{model_name="${MODEL}"} ${goFloat(s.ttftSum)}`);
  for (const le of ['0.001', '0.01', '0.1', '1.0', '10.0', '+Inf']) out.push(`sglang:time_to_first_token_seconds_bucket{le="${le}",model_name="${MODEL}"} ${goFloat(le === '+Inf' ? s.ttftCount : Math.floor(s.ttftCount / 2))}`);
  out.push(`sglang:time_to_first_token_seconds_count{model_name="${MODEL}"} ${goFloat(s.ttftCount)}`);
  return out.join('\n') + '\n';
}

/** The router's `/engine_metrics`: every engine's samples, `worker_addr` added, names without the colon. */
export function routerMetricsText(engines: { addr: string; state: EngineState }[]): string {
  const out: string[] = [];
  for (const e of engines) {
    for (const line of engineMetricsText(e.state).split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const named = line.replace(/^sglang:/, 'sglang_');
      out.push(named.includes('{') ? named.replace('{', `{worker_addr="${e.addr}",`) : named.replace(' ', `{worker_addr="${e.addr}"} `));
    }
  }
  return out.join('\n') + '\n';
}

export interface FakeHttp {
  addr: string;
  /** Requests served, by path. */
  hits: Map<string, number>;
  /** When set, answers 500 (an engine mid-restart). */
  failing: boolean;
  close(): Promise<void>;
}

/** Serves `path → text()` on 127.0.0.1 (a fresh port). */
export async function serveText(routes: Record<string, () => string>): Promise<FakeHttp> {
  const fake: Partial<FakeHttp> = { hits: new Map(), failing: false };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    fake.hits!.set(path, (fake.hits!.get(path) ?? 0) + 1);
    const route = routes[path];
    if (fake.failing) {
      res.writeHead(500).end('engine restarting');
      return;
    }
    if (route === undefined) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' }).end(route());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.addr = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => new Promise<void>((r) => server.close(() => r()));
  return fake as FakeHttp;
}

export async function fakeEngine(state: EngineState = defaultEngineState()): Promise<FakeHttp & { state: EngineState }> {
  const f = await serveText({ '/metrics': () => engineMetricsText(state) });
  return Object.assign(f, { state });
}
