// `rlsight export <kind> …`: one entry per kind of export. Each entry parses its own flags and writes its
// own output; add a kind by adding an entry to EXPORTS.
import { hostname } from 'node:os';
import { extname, join } from 'node:path';
import type { ParseArgsConfig } from 'node:util';
import { eventFileName } from '../formats/tfevents.ts';
import { encodeTable, rolloutTable, runEventFile, runMetricsTable, tableFormat } from '../queries/exports.ts';
import type { RunSources } from '../queries/runAnswers.ts';
import { integerRunsText } from '../queries/integerRuns.ts';
import { NotFound } from '../run/errors.ts';
import { CommandUsageError, incompleteness, intFlag, namesIn, openRunDir, outPath, requireFlag, runCommand, runDirArgs, tensorboardFlag, writeWhole, type ExportKind } from './common.ts';
import { perfettoExport } from './exportPerfetto.ts';
import { telemetryExport } from './exportTelemetry.ts';

function parse(argv: string[], kind: string, options: NonNullable<ParseArgsConfig['options']>) {
  const { run, values } = runDirArgs(argv, `export ${kind}`, options);
  return { run, v: values as Record<string, string | boolean | undefined> };
}

/**
 * `--format`, or without it the one `--out`'s extension names (`.csv`, `.parquet`); neither is a usage error,
 * and so is a format the extension contradicts (CSV written into `x.parquet`).
 */
function tableFlag(raw: string | boolean | undefined, out: string) {
  const ext = extname(out).slice(1).toLowerCase();
  const named = ext === 'csv' || ext === 'parquet' ? ext : null;
  if (raw === undefined) {
    if (named === null) throw new CommandUsageError(`--format is required (csv or parquet) when --out does not end in .csv or .parquet`);
    return tableFormat(named);
  }
  if (named !== null && raw !== named) throw new CommandUsageError(`--format ${raw} does not match --out's .${named}; give the one you mean`);
  try {
    return tableFormat(raw as string | undefined);
  } catch (e) {
    throw new CommandUsageError(`--${(e as Error).message}`);
  }
}

/**
 * The train steps whose `dump/*` values an export left out, one line each as `health` says them: a dump still
 * being written (modified within the last minute: the export is worth running again) or damaged.
 */
async function unreadSteps(run: RunSources): Promise<string[]> {
  return (await run.stepFacts({ progressive: false, priority: 'background' })).warnings;
}

const metrics: ExportKind = {
  usage: 'metrics DIR [--tensorboard LOGDIR] --format csv|parquet --out FILE   every logged and dump/* key, one row per step key and step (_step_key, _step)',
  async run(argv) {
    const { run: dir, v } = parse(argv, 'metrics', { format: { type: 'string' }, out: { type: 'string' }, tensorboard: { type: 'string' } });
    const logdir = tensorboardFlag(v.tensorboard as string | undefined);
    const out = outPath(v.out as string, dir, 'file', logdir);
    const format = tableFlag(v.format, out);
    const run = await openRunDir(dir, undefined, logdir);
    try {
      const { table, warnings } = await runMetricsTable(run.answers);
      writeWhole(out, encodeTable(table, format));
      console.log(`wrote ${table.rows.length} rows (${rowsByStepKey(table)}) × ${table.columns.length - 2} keys to ${out}`);
      // a key written under another name is said as a problem is: the file is not what a script naming it expects
      return incompleteness(run.answers, [...(await unreadSteps(run.answers)), ...warnings]);
    } finally {
      await run.close();
    }
  },
};

const rollout: ExportKind = {
  usage: 'rollout DIR --step N [--eval] --format csv|parquet --out FILE   one step\'s rollout table',
  async run(argv) {
    const { run: dir, v } = parse(argv, 'rollout', {
      step: { type: 'string' },
      eval: { type: 'boolean' },
      format: { type: 'string' },
      out: { type: 'string' },
    });
    const step = intFlag(requireFlag(v.step as string, 'step'), 'step')!;
    const out = outPath(v.out as string, dir, 'file');
    const format = tableFlag(v.format, out);
    const run = await openRunDir(dir);
    try {
      let table: Awaited<ReturnType<typeof rolloutTable>>;
      try {
        table = await rolloutTable(run.answers, step, v.eval === true);
      } catch (e) {
        if (!(e instanceof NotFound)) throw e;
        // say which steps there are, whatever the format's own words for the missing one
        const ids = await run.answers.rolloutIds();
        const kind = v.eval === true ? 'eval' : 'train';
        const held = v.eval === true ? ids.eval : ids.train;
        throw new Error(`${e.message}; its ${kind} steps are ${held.length ? integerRunsText(held) : 'none'}`);
      }
      writeWhole(out, encodeTable(table, format));
      console.log(`wrote ${table.rows.length} samples of step ${step} to ${out}`);
      // one step's table is whole or not written (the step's own damage fails the command)
      return 0;
    } finally {
      await run.close();
    }
  },
};

const tensorboard: ExportKind = {
  usage: 'tensorboard DIR [--tensorboard LOGDIR] --out LOGDIR   an events.out.tfevents.* file with a scalar per key and step',
  async run(argv) {
    const { run: dir, v } = parse(argv, 'tensorboard', { out: { type: 'string' }, tensorboard: { type: 'string' } });
    // the run's metrics as `serve DIR --tensorboard LOGDIR` shows them: the trainer's own scalars among them
    const source = tensorboardFlag(v.tensorboard as string | undefined);
    const logdir = outPath(v.out as string, dir, 'dir', source);
    // TensorBoard reads every event file of a logdir: a second export beside a first would show each point twice
    const earlier = namesIn(logdir).find((n) => n.startsWith('events.out.tfevents.'));
    if (earlier) throw new CommandUsageError(`--out: ${v.out} already holds ${earlier}; TensorBoard would show every point twice: give a new or empty logdir`);
    const run = await openRunDir(dir, undefined, source);
    try {
      const createdAt = Date.now() / 1000;
      const bytes = await runEventFile(run.answers, createdAt);
      const path = join(logdir, eventFileName(createdAt, hostname()));
      writeWhole(path, bytes);
      console.log(`wrote ${path} (open with: tensorboard --logdir ${logdir})`);
      return incompleteness(run.answers, await unreadSteps(run.answers));
    } finally {
      await run.close();
    }
  },
};

export const EXPORTS: Record<string, ExportKind> = { metrics, rollout, tensorboard, perfetto: perfettoExport, telemetry: telemetryExport };

export function exportUsage(): string {
  return Object.entries(EXPORTS)
    .map(([, k]) => `  rlsight export ${k.usage}`)
    .join('\n');
}

export async function exportCommand(argv: string[]): Promise<number> {
  const [kind, ...rest] = argv;
  return runCommand(async () => {
    const entry = kind === undefined ? undefined : EXPORTS[kind];
    if (!entry) throw new CommandUsageError(`export: ${kind === undefined ? 'which export?' : `unknown kind '${kind}'`} (expected ${Object.keys(EXPORTS).join(', ')})`);
    return entry.run(rest);
  });
}

/** A metrics table's rows counted per step key (`3 rollout/step, 40 tensorboard/step`). */
function rowsByStepKey(table: { rows: readonly (readonly unknown[])[] }): string {
  const counts = new Map<string, number>();
  for (const r of table.rows) counts.set(String(r[0] ?? 'no step key'), (counts.get(String(r[0] ?? 'no step key')) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
}
