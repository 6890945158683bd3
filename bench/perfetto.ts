// Perfetto export sizes: the demo run (whole run) and a window of the 1,024-GPU synthetic run; one JSON line.
// Usage: node --import tsx bench/perfetto.ts [--gpus 1024] [--hours 1] [--window 600]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateDemoRun, reusableSyntheticRun } from '../src/demo/index.ts';
import { perfettoForRun } from '../src/queries/perfettoExport.ts';
import { openRun } from '../src/commands/openRun.ts';

const { values } = parseArgs({ options: { gpus: { type: 'string' }, hours: { type: 'string' }, window: { type: 'string' } } });
const scratch = mkdtempSync(join(tmpdir(), 'rlsight-bench-perfetto-'));

async function measure(dir: string, window?: number): Promise<{ events: number; bytes: number; ms: number; window_s: number | null }> {
  const run = await openRun(dir);
  try {
    const meta = await run.meta({ follow: false, useUtilizationOverview: false });
    const range = meta.time_range;
    const w = window && range ? { t0: range[1] - window, t1: range[1] } : {};
    const start = performance.now();
    const trace = await perfettoForRun(run, w);
    const bytes = Buffer.byteLength(JSON.stringify(trace));
    return { events: trace.traceEvents.length, bytes, ms: Math.round(performance.now() - start), window_s: window ?? null };
  } finally {
    await run.close();
  }
}

try {
  const demoDir = join(scratch, 'demo');
  await generateDemoRun(demoDir, {});
  const demo = await measure(demoDir);
  const synthDir = join(scratch, 'synthetic');
  await reusableSyntheticRun(synthDir, { gpus: Number(values.gpus ?? 1024), hours: Number(values.hours ?? 1), dumpSteps: 0 });
  const synthetic = await measure(synthDir, Number(values.window ?? 600));
  process.stdout.write(JSON.stringify({ bench: 'perfetto-export', demo, synthetic: { gpus: Number(values.gpus ?? 1024), ...synthetic } }) + '\n');
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
