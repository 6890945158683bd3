// The step-wide answers (the health board, the `dump/*` series) of a run opened fresh with an empty cache
// directory: the first answer of each (at once over the steps read so far, with its coverage), the first board
// with a row, the time until the background read of the steps has read them all (the board complete), and the first board of a fresh
// process over the cache that read filled (no step decoded). `--complete`: instead, the first answers as a
// server gave them before they were progressive (every step read before answering; what `rlsight health`
// and `export metrics` still do). Wall and CPU times in ms, with the load average. Prints one JSON line.
// Usage: node --import tsx bench/stepAnswers.ts --run DIR [--complete]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openRun } from '../src/commands/openRun.ts';
import { runHealth } from '../src/queries/health.ts';
import { STEP_AGGREGATE_METRICS } from '../src/queries/rollouts.ts';
import { STEP_FACTS_ENTRY } from '../src/queries/stepFacts.ts';
import { createApp } from '../src/server/app.ts';

const { values } = parseArgs({ options: { run: { type: 'string' }, complete: { type: 'boolean' } } });
if (!values.run) throw new Error('usage: bench/stepAnswers.ts --run DIR [--complete]');
const runDir = resolve(values.run);
const cacheDir = mkdtempSync(join(tmpdir(), 'rlsight-bench-steps-'));
const round = (x: number): number => Math.round(x * 10) / 10;
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const DUMP = `/api/metrics?keys=${STEP_AGGREGATE_METRICS.map((c) => `dump/${c}`).join(',')}`;

/** Wall and CPU ms of `f`, and what it gave. */
async function timed<T>(f: () => Promise<T>): Promise<{ ms: number; cpu_ms: number; value: T }> {
  const [t, c] = [performance.now(), cpu()];
  const value = await f();
  return { ms: round(performance.now() - t), cpu_ms: round(cpu() - c), value };
}

async function ask(app: ReturnType<typeof createApp>, url: string): Promise<{ status: number; coverage: string | null }> {
  const res = await app.request(url, { headers: { host: '127.0.0.1' } });
  await res.arrayBuffer();
  return { status: res.status, coverage: res.headers.get('x-rlsight-coverage') };
}

const out: Record<string, unknown> = { run: runDir, load_before: loadavg().map((x) => round(x * 100) / 100) };
try {
  const run = await openRun(runDir, { cacheDir });
  out.steps = (await run.rolloutIds()).train.length;
  const app = createApp({ run });
  if (values.complete) {
    const health = await timed(() => runHealth(run));
    out.health_complete = { ms: health.ms, cpu_ms: health.cpu_ms };
    const dump = await timed(() => ask(app, DUMP));
    out.dump_metrics_after_health = { ms: dump.ms, cpu_ms: dump.cpu_ms };
  } else {
    const health = await timed(() => ask(app, '/api/rlsight/health'));
    out.health_first = { ms: health.ms, cpu_ms: health.cpu_ms, coverage: health.value.coverage };
    const dump = await timed(() => ask(app, `${DUMP}&progressive=true`));
    out.dump_metrics_first = { ms: dump.ms, cpu_ms: dump.cpu_ms, coverage: dump.value.coverage };
    // the first board with a row: the newest step read in the background, the phase hours parsed for its stragglers
    const firstRow = await timed(async () => {
      for (;;) {
        const res = await app.request('/api/rlsight/health', { headers: { host: '127.0.0.1' } });
        const board = (await res.json()) as { rows: unknown[]; coverage?: unknown };
        if (board.rows.length > 0) return res.headers.get('x-rlsight-coverage');
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    out.health_first_row_after = { ms: round(health.ms + dump.ms + firstRow.ms), coverage: firstRow.value };
    const all = await timed(async () => {
      await run.stepFactsSettled();
      return ask(app, '/api/rlsight/health');
    });
    out.health_complete_after = { ms: round(health.ms + dump.ms + firstRow.ms + all.ms), coverage: all.value.coverage };
    // (the facts are written once no answer is being given)
    const keptSteps = (): number => {
      try {
        return (JSON.parse(readFileSync(join(cacheDir, STEP_FACTS_ENTRY), 'utf8')) as { steps: unknown[] }).steps.length;
      } catch {
        return 0;
      }
    };
    for (let i = 0; i < 500 && keptSteps() < (out.steps as number); i++) await new Promise((r) => setTimeout(r, 20));
    await run.close();
    // a fresh process over the kept facts: no step decoded
    const again = await openRun(runDir, { cacheDir });
    const warm = await timed(() => ask(createApp({ run: again }), '/api/rlsight/health'));
    out.health_first_kept = { ms: warm.ms, cpu_ms: warm.cpu_ms, coverage: warm.value.coverage };
    await again.close();
  }
  out.peak_rss_mib = Math.round(process.resourceUsage().maxRSS / 1024);
  out.load_after = loadavg().map((x) => round(x * 100) / 100);
  console.log(JSON.stringify(out));
} finally {
  rmSync(cacheDir, { recursive: true, force: true });
}
process.exit(0);
