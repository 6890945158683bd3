// A synthetic run in the real on-disk telemetry format, at cluster scale (default: 1,024 GPUs =
// 128 nodes × 8, 6 h of 1 Hz gpu_util, 128 engines scraped every 2 s, phases for every rank at a
// 6-minute step, trajectory events). Deterministic; timestamps look like `time.time()` floats.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pyFloat } from '../src/demo/pythonJson.ts';

export interface SyntheticRunOptions {
  nodes?: number;
  gpusPerNode?: number;
  hours?: number;
  /** Hour-aligned UTC start. */
  start?: number;
  stepSeconds?: number;
  engineTickSeconds?: number;
  samplesPerStep?: number;
}

export interface SyntheticRunFacts {
  dir: string;
  start: number;
  end: number;
  lanes: number;
  gpuRows: number;
  engineRows: number;
  phaseRows: number;
  trajectoryRows: number;
  bytes: number;
}

const HOUR = 3600;

function hourKey(ts: number): string {
  const d = new Date(Math.floor(ts) * 1000);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}`;
}

/** Buffered appends to one file per key, flushed in large writes. */
class Sink {
  private parts: string[] = [];
  private size = 0;
  private fd: number | null = null;
  bytes = 0;
  constructor(private readonly path: string) {}
  push(line: string): void {
    this.parts.push(line);
    this.size += line.length;
    if (this.size > 4 << 20) this.flush();
  }
  flush(): void {
    if (this.parts.length === 0) return;
    this.fd ??= openSync(this.path, 'a');
    const s = this.parts.join('');
    writeSync(this.fd, s);
    this.bytes += Buffer.byteLength(s);
    this.parts = [];
    this.size = 0;
  }
  close(): void {
    this.flush();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

class HourlySinks {
  private readonly open = new Map<string, Sink>();
  bytes = 0;
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }
  push(ts: number, line: string): void {
    const key = hourKey(ts);
    let s = this.open.get(key);
    if (s === undefined) {
      s = new Sink(join(this.dir, `${key}.jsonl`));
      this.open.set(key, s);
    }
    s.push(line);
  }
  closeBefore(ts: number): void {
    const key = hourKey(ts);
    for (const [k, s] of this.open) {
      if (k < key) {
        s.close();
        this.bytes += s.bytes;
        this.open.delete(k);
      }
    }
  }
  close(): void {
    for (const s of this.open.values()) {
      s.close();
      this.bytes += s.bytes;
    }
    this.open.clear();
  }
}

/** A `time.time()`-like float: whole seconds plus a fraction with 7 decimals. */
function stamp(t: number, salt: number): number {
  return t + ((salt * 2654435761) % 9999991) / 1e7;
}

const ENGINE_SERIES: [string, number][] = [
  ['sglang_num_running_reqs', 2],
  ['sglang_num_queue_reqs', 2],
  ['sglang_gen_throughput', 2],
  ['sglang_token_usage', 2],
  ['sglang_cache_hit_rate', 2],
  ['sglang_prompt_tokens_total', 2],
  ['sglang_generation_tokens_total', 2],
  ['sglang_num_requests_total', 2],
  ['sglang_num_aborted_requests_total', 1],
  ['sglang_time_to_first_token_seconds_sum', 1],
  ['sglang_time_to_first_token_seconds_count', 1],
  ['sglang_e2e_request_latency_seconds_sum', 1],
  ['sglang_e2e_request_latency_seconds_count', 1],
  ['sglang_inter_token_latency_seconds_sum', 1],
  ['sglang_inter_token_latency_seconds_count', 1],
]; // 23 samples per engine per tick

/** Writes the run under `dir/dashboard/` (replacing it) and returns what it holds. */
export function writeSyntheticRun(dir: string, opts: SyntheticRunOptions = {}): SyntheticRunFacts {
  const nodes = opts.nodes ?? 128;
  const gpn = opts.gpusPerNode ?? 8;
  const hours = opts.hours ?? 6;
  const start = opts.start ?? 1755792000; // 2025-08-21 16:00 UTC
  const stepS = opts.stepSeconds ?? 360;
  const tickS = opts.engineTickSeconds ?? 2;
  const samplesPerStep = opts.samplesPerStep ?? 640;
  const end = start + hours * HOUR;
  const dash = join(dir, 'dashboard');
  rmSync(dash, { recursive: true, force: true });
  mkdirSync(dash, { recursive: true });
  const nodeIp = (n: number): string => `10.${Math.floor(n / 250)}.${n % 250}.${1 + (n % 7)}`;
  const engineAddr = (e: number): string => `http://${nodeIp(e)}:15000`;
  const ranks = nodes * gpn;
  const facts: SyntheticRunFacts = { dir, start, end, lanes: ranks, gpuRows: 0, engineRows: 0, phaseRows: 0, trajectoryRows: 0, bytes: 0 };

  writeFileSync(
    join(dash, 'meta.json'),
    JSON.stringify({ run_name: 'synthetic-1024', start_ts: start - 120, args: { colocate: true, num_gpus_per_node: gpn, actor_num_nodes: nodes, rollout_num_gpus_per_engine: gpn }, schema_version: 1 }, null, 1),
  );
  const catalog: Record<string, { ranks: number[]; engine_addrs: string[]; roles: string[] }> = {};
  for (let n = 0; n < nodes; n++) for (let g = 0; g < gpn; g++) catalog[`${nodeIp(n)}:${g}`] = { ranks: [n * gpn + g], engine_addrs: [engineAddr(n)], roles: ['rollout', 'train'] };
  writeFileSync(join(dash, 'lane_catalog.json'), JSON.stringify({ version: 1, lanes: catalog }));
  const engines = Array.from({ length: nodes }, (_, n) => ({
    addr: engineAddr(n),
    worker_type: 'regular',
    engine_rank: n,
    gpus: Array.from({ length: gpn }, (_, g) => [nodeIp(n), g]),
    gpu_uuids: Array.from({ length: gpn }, () => null),
  }));
  writeFileSync(join(dash, 'topology.jsonl'), `{"ts":${pyFloat(start - 60)},"engines":${JSON.stringify(engines)}}\n`);

  // gpu_util and engine_series, second by second
  const gpu = new HourlySinks(join(dash, 'gpu_util'));
  const eng = new HourlySinks(join(dash, 'engine_series'));
  const counters = new Float64Array(nodes * ENGINE_SERIES.length * 2);
  const nodeNames = Array.from({ length: nodes }, (_, n) => nodeIp(n));
  for (let t = start; t < end; t++) {
    const inStep = (t - start) % stepS;
    const rolloutPhase = inStep < stepS * 0.55;
    for (let n = 0; n < nodes; n++) {
      const ts = pyFloat(stamp(t, n + 1));
      const node = nodeNames[n];
      for (let g = 0; g < gpn; g++) {
        const util = rolloutPhase ? 60 + ((t * 13 + n * 7 + g * 3) % 40) : ((t + n + g) % 17) * 6;
        const mem = 60000 + ((t * 31 + n * 11 + g) % 17000);
        const power = 200 + util * 5 + (g % 3);
        gpu.push(t, `{"ts":${ts},"node":"${node}","gpu":${g},"util":${util},"mem_mb":${mem},"power_w":${power}}\n`);
        facts.gpuRows++;
      }
    }
    if ((t - start) % tickS === 0) {
      const ts = pyFloat(stamp(t, 0));
      for (let e = 0; e < nodes; e++) {
        const addr = engineAddr(e);
        let c = e * ENGINE_SERIES.length * 2;
        for (const [metric, dps] of ENGINE_SERIES) {
          for (let dp = 0; dp < dps; dp++, c++) {
            let v: number;
            if (metric.endsWith('_total') || metric.endsWith('_count') || metric.endsWith('_sum')) {
              counters[c] += rolloutPhase ? 1 + ((t + e + dp) % 50) * (metric.endsWith('_sum') ? 0.37 : 1) : 0;
              v = counters[c];
            } else if (metric === 'sglang_token_usage' || metric === 'sglang_cache_hit_rate') v = rolloutPhase ? 0.5 + ((t + e) % 40) / 100 : 0.01;
            else v = rolloutPhase ? (t * 7 + e + dp) % 64 : 0;
            const labels = dps > 1 ? `{"engine_type":"unified","dp_rank":"${dp}"}` : '{}';
            eng.push(t, `{"ts":${ts},"addr":"${addr}","metric":"${metric}","labels":${labels},"value":${pyFloat(v)}}\n`);
            facts.engineRows++;
          }
        }
      }
    }
    if ((t - start) % HOUR === HOUR - 1) {
      gpu.closeBefore(t + 1);
      eng.closeBefore(t + 1);
    }
  }
  gpu.close();
  eng.close();

  // phases (open marker + closed twin per interval), trajectories and metrics, step by step
  const phases = new HourlySinks(join(dash, 'phases'));
  const traj = new HourlySinks(join(dash, 'trajectories'));
  const metrics = new Sink(join(dash, 'metrics.jsonl'));
  const phase = (name: string, t0: number, t1: number, node: string, gpus: string, rank: number, role: string): void => {
    phases.push(t0, `{"name":"${name}","t0":${pyFloat(t0)},"t1":-1.0,"node":"${node}","gpus":[${gpus}],"rank":${rank},"role":"${role}"}\n`);
    phases.push(t1, `{"name":"${name}","t0":${pyFloat(t0)},"t1":${pyFloat(t1)},"node":"${node}","gpus":[${gpus}],"rank":${rank},"role":"${role}"}\n`);
    facts.phaseRows += 2;
  };
  let sample = 0;
  for (let s = 0, t = start; t + stepS <= end; s++, t += stepS) {
    const rolloutEnd = t + stepS * 0.55;
    phase('rollout', stamp(t, 3), stamp(rolloutEnd, 5), '10.255.0.1', '', -1, 'rollout_manager');
    for (let r = 0; r < ranks; r++) {
      const node = nodeNames[Math.floor(r / gpn)];
      const g = String(r % gpn);
      const skew = (r % 17) * 0.05;
      phase('train_wait', stamp(t + 1, r), stamp(rolloutEnd + skew, r + 1), node, g, r, 'train');
      phase('actor_train', stamp(rolloutEnd + skew + 1, r + 2), stamp(t + stepS * 0.92 + skew, r + 3), node, g, r, 'train');
      phase('update_weights', stamp(t + stepS * 0.92 + skew, r + 4), stamp(t + stepS * 0.98, r + 5), node, g, r, 'train');
    }
    for (let i = 0; i < samplesPerStep; i++, sample++) {
      const a0 = t + 2 + (i % 100) * 0.5;
      const ev = (ts: number, kind: string, turn: number, detail = ''): void => {
        traj.push(ts, `{"ts":${pyFloat(stamp(ts, i))},"kind":"${kind}","sample_index":${sample},"group_index":${Math.floor(sample / 8)},"turn":${turn},"weight_version":"${s}","detail":"${detail}"}\n`);
        facts.trajectoryRows++;
      };
      ev(a0, 'attempt_start', -1);
      let x = a0 + 1;
      for (let turn = 1; turn <= 3; turn++) {
        ev(x, 'gen_start', turn);
        x += 5 + ((i * turn) % 20);
        ev(x, 'gen_end', turn, String(100 + i));
        if (turn < 3) {
          ev(x, 'tool_start', turn, '1 calls');
          x += 2 + (i % 5);
          ev(x, 'tool_end', turn, '1 calls');
        }
      }
      ev(x + 1, 'attempt_end', -1, 'completed');
    }
    const m: Record<string, number> = { 'rollout/step': s, 'perf/step_time': stepS - 3, 'perf/wait_time_ratio': 0.55, 'perf/actor_train_mfu': 0.41, 'perf/mfu_peak_tflops': 989 };
    for (let k = 0; k < 44; k++) m[`rollout/stat_${k}`] = (s * 31 + k) / 7;
    metrics.push(`${JSON.stringify({ ts: stamp(t + stepS - 1, 9), step_key: 'rollout/step', step: s, metrics: m })}\n`);
  }
  phases.close();
  traj.close();
  metrics.close();
  facts.bytes = gpu.bytes + eng.bytes + phases.bytes + traj.bytes + metrics.bytes;
  writeFileSync(join(dir, 'synthetic.json'), JSON.stringify(facts));
  return facts;
}

/** The run at `dir`, generated once and reused while its parameters match. */
export function syntheticRun(dir: string, opts: SyntheticRunOptions = {}): SyntheticRunFacts {
  const stampFile = join(dir, 'synthetic.options.json');
  const want = JSON.stringify({ nodes: 128, gpusPerNode: 8, hours: 6, start: 1755792000, stepSeconds: 360, engineTickSeconds: 2, samplesPerStep: 640, ...opts });
  if (existsSync(stampFile) && existsSync(join(dir, 'synthetic.json'))) {
    try {
      if (readFileSync(stampFile, 'utf8') === want) return JSON.parse(readFileSync(join(dir, 'synthetic.json'), 'utf8')) as SyntheticRunFacts;
    } catch {
      // regenerate
    }
  }
  mkdirSync(dir, { recursive: true });
  rmSync(stampFile, { force: true });
  const facts = writeSyntheticRun(dir, opts);
  writeFileSync(stampFile, want);
  return facts;
}
