// `rlsight export perfetto DIR [--t0 T --t1 T] --out FILE`: one window of the run (Unix seconds, any width;
// the whole run without them) as Chrome trace-event JSON for ui.perfetto.dev.
import { fileSizeText, holdsNothing, nothingToExportText, tooBigToLoad } from '../queries/perfetto.ts';
import { perfettoForRun, perfettoSpan } from '../queries/perfettoExport.ts';
import { CommandUsageError, incompleteness, openRunDir, outPath, runDirArgs, writeWhole, type ExportKind } from './common.ts';


function floatFlag(raw: string | undefined, flag: string): number | undefined {
  if (raw === undefined) return undefined;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v)) throw new CommandUsageError(`--${flag}: expected a number (epoch seconds), got '${raw}'`);
  return v;
}

export const perfettoExport: ExportKind = {
  usage: 'perfetto DIR [--t0 T --t1 T] --out FILE     Chrome trace-event JSON for ui.perfetto.dev',
  async run(argv) {
    const { run: dir, values: v } = runDirArgs(argv, 'export perfetto', { t0: { type: 'string' }, t1: { type: 'string' }, out: { type: 'string' } });
    const out = outPath(v.out, dir, 'file');
    const t0 = floatFlag(v.t0, 't0');
    const t1 = floatFlag(v.t1, 't1');
    if (t0 !== undefined && t1 !== undefined && t1 <= t0) throw new CommandUsageError(`--t1 must be after --t0`);
    // Any format: a slime run exports its request traces, a miles run its compute timeline.
    const opened = await openRunDir(dir);
    const run = opened.answers;
    try {
      const trace = await perfettoForRun(run, { t0, t1 });
      const leftOut = trace.otherData.skipped_steps ? [`left out: ${trace.otherData.skipped_steps}`] : [];
      if (holdsNothing(trace)) {
        incompleteness(run, leftOut);
        throw new Error(`${nothingToExportText({ t0, t1 }, await perfettoSpan(run), { t0: '--t0', t1: '--t1' })}; nothing written`);
      }
      const bytes = new TextEncoder().encode(JSON.stringify(trace));
      const tooBig = tooBigToLoad(bytes.length, '--t0/--t1');
      if (tooBig !== null) throw new CommandUsageError(tooBig);
      writeWhole(out, bytes);
      console.log(`wrote ${trace.traceEvents.length} trace events (${fileSizeText(bytes.length)}) to ${out}; open it at https://ui.perfetto.dev`);
      return incompleteness(run, leftOut);
    } finally {
      await opened.close();
    }
  },
};
