// Bytes and decode time of the series answers the app reads as columnar frames, JSON vs frame: a 1 h ×
// 64-lane phases answer (the timeline's lanes) and a whole-run engine chart (the Metrics view's ask).
// Decoding is what the app does with each: JSON.parse plus grouping phases by lane, or the frame's views.
// Usage: node --import tsx bench/columns.ts --run DIR [--cache-dir DIR] [--port N] [--repeat N]
// Prints one JSON line.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { decodeColumns, engineSeriesOf, phaseLanes, type EngineSeriesHeader, type PhasesHeader } from '../web/columns.ts';
import type { Phase } from '../src/wire/index.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { run: { type: 'string' }, 'cache-dir': { type: 'string' }, port: { type: 'string' }, repeat: { type: 'string' } } });
if (!values.run) throw new Error('--run DIR is required');
const port = Number(values.port ?? 17792);
const repeat = Number(values.repeat ?? 15);
const scratch = values['cache-dir'] ? null : mkdtempSync(join(tmpdir(), 'rlsight-columns-'));
const cacheDir = values['cache-dir'] ? resolve(values['cache-dir']) : scratch!;
const base = `http://127.0.0.1:${port}`;

const child = spawn(process.execPath, [join(repoRoot, 'bin', 'rlsight.mjs'), 'serve', resolve(values.run), '--port', String(port), '--cache-dir', cacheDir], { stdio: ['ignore', 'ignore', 'inherit'] });
for (;;) {
  try {
    if ((await fetch(`${base}/api/meta`)).ok) break;
  } catch {
    /* not listening yet */
  }
  await new Promise((r) => setTimeout(r, 20));
}

async function body(path: string, columns: boolean): Promise<ArrayBuffer> {
  const res = await fetch(base + path, { headers: columns ? { accept: 'application/vnd.rlsight.columns' } : {} });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return res.arrayBuffer();
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

function timed(f: () => unknown): number {
  const ms: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const t = performance.now();
    f();
    ms.push(performance.now() - t);
  }
  return round(median(ms), 3);
}

async function compare(path: string, decodeJson: (text: string) => unknown, decodeFrame: (buf: ArrayBuffer) => unknown) {
  const json = await body(path, false);
  const frame = await body(path, true);
  const text = new TextDecoder().decode(json);
  return {
    json_bytes: json.byteLength,
    frame_bytes: frame.byteLength,
    json_gzip_bytes: gzipSync(new Uint8Array(json)).length,
    frame_gzip_bytes: gzipSync(new Uint8Array(frame)).length,
    json_decode_ms: timed(() => decodeJson(text)),
    frame_decode_ms: timed(() => decodeFrame(frame)),
  };
}

const meta = (await (await fetch(`${base}/api/meta`)).json()) as { time_range: [number, number]; engine_metric_keys: string[] };
const [, end] = meta.time_range;
const phasesPath = `/api/timeline/phases?t0=${end - 3600}&t1=${end}&lanes=g:0-63`;
const phases = await compare(
  phasesPath,
  (text) => {
    // What the app did with the JSON answer: parse, then group the rows by lane.
    const byLane = new Map<string, Phase[]>();
    for (const p of (JSON.parse(text) as { phases: Phase[] }).phases) {
      const k = `${p.node}:${p.gpu}`;
      let list = byLane.get(k);
      if (!list) byLane.set(k, (list = []));
      list.push(p);
    }
    return byLane;
  },
  (buf) => phaseLanes(decodeColumns<PhasesHeader>(buf)),
);
const metric = meta.engine_metric_keys.find((k) => k.includes('gen_throughput')) ?? meta.engine_metric_keys[0]!;
const enginePath = `/api/timeline/engine_series?metric=${encodeURIComponent(metric)}&max_points=1000`;
const engine = await compare(enginePath, (text) => JSON.parse(text), (buf) => engineSeriesOf(decodeColumns<EngineSeriesHeader>(buf)));

const exited = new Promise((r) => child.once('exit', r));
child.kill('SIGINT');
await exited;
if (scratch) rmSync(scratch, { recursive: true, force: true });
console.log(JSON.stringify({ run: resolve(values.run), repeat, phases_1h_64_lanes: { path: phasesPath, ...phases }, engine_chart_whole_run: { path: enginePath, ...engine } }));
