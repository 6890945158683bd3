// `rlsight health DIR [--fail-on SIGNAL,...] [--health-config FILE] [--json]`: the health board
// in the terminal, and a CI gate that exits 1 naming every listed signal that fired, 3 when it could not read everything.
import { readRegularFileSync } from '../formats/fileAccess.ts';
import { failures, unmeasured, HEALTH_SIGNALS, healthSignals, parseSignalList, runHealth, type HealthAnswer, type SignalSpec } from '../queries/health.ts';
import { CommandUsageError, EXIT_FAILED, incompleteness, openRunDir, runCommand, runDirArgs, terminalSafe } from './common.ts';

export const HEALTH_USAGE = `  rlsight health DIR [--fail-on SIGNAL,...] [--health-config FILE] [--json]
                                   per-step failure signals; exit 1 when a --fail-on signal fired,
                                   3 when a step could not be read (and none fired), 2 on bad usage
                                   (signals: ${HEALTH_SIGNALS.join(', ')})`;

/** Thresholds from `--health-config FILE` (JSON), or the defaults. */
export function loadHealthConfig(file: string | undefined): SignalSpec[] {
  if (file === undefined) return healthSignals(undefined);
  let text: string;
  try {
    // a regular file only: a FIFO would block the command until something writes to it
    text = readRegularFileSync(file).toString('utf8');
  } catch (e) {
    throw new CommandUsageError(`--health-config: cannot read ${file}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new CommandUsageError(`--health-config: ${file} is not JSON: ${(e as Error).message}`);
  }
  try {
    return healthSignals(doc, file);
  } catch (e) {
    throw new CommandUsageError(`--health-config: ${(e as Error).message}`);
  }
}

const MARK = { ok: '·', warn: '!', fire: '▲', none: ' ' } as const;

/** The board as text: one line per step, `value` and a mark per signal (`▲` fired, `!` warning: the app's marks). */
export function boardText(answer: HealthAnswer): string {
  const ids = answer.signals.map((s) => s.id);
  const width = ids.map((id) => Math.max(id.length, 9));
  const lines = [['step', ...ids].map((h, i) => (i === 0 ? h.padStart(5) : h.padStart(width[i - 1]))).join(' ')];
  for (const r of answer.rows) {
    const cells = ids.map((id, i) => {
      const c = r.cells[id];
      const v = c.value === null ? '-' : Math.abs(c.value) >= 100 || Number.isInteger(c.value) ? String(Math.round(c.value)) : c.value.toFixed(3);
      return `${v}${MARK[c.level]}`.padStart(width[i]);
    });
    lines.push([String(r.step).padStart(5), ...cells].join(' '));
  }
  return `${lines.join('\n')}\n`;
}

export async function healthCommand(argv: string[]): Promise<number> {
  return runCommand(async () => {
    const { run: dir, values } = runDirArgs(argv, 'health', {
      'fail-on': { type: 'string' },
      'health-config': { type: 'string' },
      'cache-dir': { type: 'string' },
      json: { type: 'boolean' },
    });
    let failOn: ReturnType<typeof parseSignalList> = [];
    if (values['fail-on'] !== undefined) {
      try {
        failOn = parseSignalList(values['fail-on'], '--fail-on');
      } catch (e) {
        throw new CommandUsageError((e as Error).message);
      }
    }
    const signals = loadHealthConfig(values['health-config']);
    const run = await openRunDir(dir, values['cache-dir']);
    try {
      const answer = await runHealth(run.answers, signals);
      process.stdout.write(values.json ? `${JSON.stringify(answer)}\n` : terminalSafe(boardText(answer), true));
      const blind = unmeasured(answer, failOn).map((signal) => `--fail-on ${signal}: no step of this run measures it, so the gate could not look`);
      const partial = incompleteness(run.answers, [...answer.warnings, ...blind]);
      const failed = failures(answer, failOn);
      for (const f of failed) console.error(`rlsight health: fired: ${terminalSafe(f)}`);
      // A fired gate outranks a partial read: what was read already fails the gate.
      return failed.length ? EXIT_FAILED : partial;
    } finally {
      await run.close();
    }
  });
}
