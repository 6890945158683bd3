// A followed collected run's whole-run answers as its steps grow: `/api/meta`, the Rollouts figures' `/api/metrics`
// and the runs table (`/api/runs`) on a run of --steps steps of --samples samples each, asked a first time (the
// steps read within its time budget), again, and after one new step is written (as a live run's next step). Wall and
// CPU ms with the load average and the process's peak RSS (a first answer given over the steps read so far says
// how many, and the ms until the background has read them all); then a restarted server over the same cache
// directory (its first answers). Prints one JSON line.
// Usage: node --import tsx bench/collectedSteps.ts [--steps 165] [--samples 64] [--repeat 5]
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sampleStepFile, SAMPLES_DIR, type SampleFields } from '../src/formats/collectedSamples.ts';
import { encodeSampleStep } from '../src/formats/collectedSamplesWrite.ts';
import { openRun } from '../src/commands/openRun.ts';
import { createApp } from '../src/server/app.ts';

const { values } = parseArgs({ options: { steps: { type: 'string' }, samples: { type: 'string' }, repeat: { type: 'string' } } });
const STEPS = Number(values.steps ?? 165);
const SAMPLES = Number(values.samples ?? 64);
const REPEAT = Number(values.repeat ?? 5);
const round = (x: number): number => Math.round(x * 10) / 10;
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const dir = mkdtempSync(join(tmpdir(), 'rlsight-bench-collected-'));
const OLD = Date.now() / 1000 - 86_400;
function writeStep(step: number): void {
  const samples: SampleFields[] = Array.from({ length: SAMPLES }, (_, i) => ({
    index: step * SAMPLES + i,
    group_index: i >> 3,
    prompt: [{ role: 'user', content: `question ${i} of step ${step}: ${'words '.repeat(40)}` }],
    response: `the answer is ${i}. ${'reasoning '.repeat(120)}`,
    response_length: 300 + i,
    tokens: Array.from({ length: 340 + i }, (_, k) => (k * 7 + i) % 50_000),
    reward: (i + step) % 3 === 0 ? 1 : 0,
    status: 'completed',
    rollout_log_probs: Array.from({ length: 300 + i }, (_, k) => -0.5 - (k % 7) * 0.01),
  }));
  const path = join(dir, SAMPLES_DIR, sampleStepFile(step, false));
  writeFileSync(path, encodeSampleStep(samples));
  utimesSync(path, OLD, OLD);
}

// the metrics as the app asks for them (`progressive`: at once over the steps read so far)
const QUERIES = { meta: '/api/meta', metrics: '/api/metrics?keys=rollout/response_len/mean,dump/reward_mean&x=rollout/step&progressive=true', runs: '/api/runs' };
const out: Record<string, unknown> = { steps: STEPS, samples: SAMPLES, load_before: loadavg().map((x) => round(x * 100) / 100) };
try {
  mkdirSync(join(dir, SAMPLES_DIR), { recursive: true });
  mkdirSync(join(dir, 'dashboard'));
  for (let s = 0; s < STEPS; s++) writeStep(s);
  const cacheDir = join(dir, '..', `${dir.split('/').pop()}-cache`);
  mkdirSync(cacheDir);
  let run = await openRun(dir, { cacheDir });
  let app = createApp({ run, options: { follow: true } });
  const ask = async (url: string) => {
    const [t, c] = [performance.now(), cpu()];
    const res = await app.request(url, { headers: { host: '127.0.0.1' } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
    // a partial answer (the steps read so far, the others read in the background) says how many it covers
    const partial = res.headers.get('x-rlsight-coverage');
    return { ms: round(performance.now() - t), cpu_ms: round(cpu() - c), ...(partial ? { partial } : {}) };
  };
  const seq = async () => {
    const r: Record<string, { ms: number; cpu_ms: number; partial?: string }> = {};
    for (const [k, u] of Object.entries(QUERIES)) r[k] = await ask(u);
    return r;
  };
  const opened = performance.now();
  out.first = await seq();
  // until the background has read every step: the first complete meta
  while ((await app.request(QUERIES.meta, { headers: { host: '127.0.0.1' } })).headers.has('x-rlsight-coverage')) await new Promise((r) => setTimeout(r, 50));
  out.complete_after_ms = round(performance.now() - opened);
  const again: Record<string, number[]> = { meta: [], metrics: [], runs: [] };
  for (let i = 0; i < REPEAT; i++) for (const [k, v] of Object.entries(await seq())) again[k]!.push(v.ms);
  out.again_ms = again;
  const next: Record<string, number[]> = { meta: [], metrics: [], runs: [] };
  for (let i = 0; i < REPEAT; i++) {
    writeStep(STEPS + i);
    await run.advance();
    for (const [k, v] of Object.entries(await seq())) next[k]!.push(v.ms);
  }
  out.after_new_step_ms = next;
  // the derived values are written once no answer is being given
  await new Promise((r) => setTimeout(r, 3000));
  await run.close();
  run = await openRun(dir, { cacheDir });
  app = createApp({ run, options: { follow: true } });
  out.restarted_first = await seq();
  await run.close();
  rmSync(cacheDir, { recursive: true, force: true });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
out.peak_rss_mib = Math.round(process.resourceUsage().maxRSS / 1024);
out.load_after = loadavg().map((x) => round(x * 100) / 100);
console.log(JSON.stringify(out));
