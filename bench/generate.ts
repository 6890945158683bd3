// Generates the synthetic 1,024-GPU run (the reference's benchmark shape) and prints one JSON line.
// Usage: node --import tsx bench/generate.ts [--out DIR] [--gpus 1024] [--hours 6] [--gpu-processes]
//          [--dump-steps 0] [--dump-samples 4096] [--collector-files] [--keep]
// Without --out it writes to a temp folder and removes it afterwards unless --keep is given.
// --collector-files also writes what `rlsight collect` writes beside the partitions (gpu_util rollups,
// engine_series and phases columns) through the collector's code, so a server over it can be compared
// with one over the same run as miles writes it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { generateSyntheticRun } from '../src/demo/index.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    gpus: { type: 'string' },
    hours: { type: 'string' },
    'gpu-processes': { type: 'boolean' },
    'collector-files': { type: 'boolean' },
    'dump-steps': { type: 'string' },
    'dump-samples': { type: 'string' },
    keep: { type: 'boolean' },
  },
});
const scratch = values.out ? null : mkdtempSync(join(tmpdir(), 'rlsight-synthetic-'));
const runDir = values.out ? resolve(values.out) : join(scratch!, 'run');
const info = await generateSyntheticRun(runDir, {
  gpus: Number(values.gpus ?? 1024),
  hours: Number(values.hours ?? 6),
  gpuProcesses: values['gpu-processes'] ?? false,
  collectorFiles: values['collector-files'] ?? false,
  dumpSteps: Number(values['dump-steps'] ?? 0),
  dumpSamples: Number(values['dump-samples'] ?? 4096),
  onProgress: (m) => process.stderr.write(m + '\n'),
});
const kept = values.out !== undefined || values.keep === true;
if (!kept && scratch) rmSync(scratch, { recursive: true, force: true });
process.stdout.write(
  JSON.stringify({
    bench: 'generate-synthetic',
    dir: kept ? runDir : null,
    gpus: info.gpus,
    engines: info.engines,
    hours: Number(values.hours ?? 6),
    collectorFiles: values['collector-files'] ?? false,
    steps: info.steps,
    rows: info.totalRows,
    rowsByStream: info.rows,
    bytes: info.bytes,
    seconds: Math.round(info.seconds * 100) / 100,
    rowsPerSecond: Math.round(info.totalRows / info.seconds),
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  }) + '\n',
);
