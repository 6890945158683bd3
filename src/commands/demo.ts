// `rlsight demo`: generate two runs of the same recipe — one healthy, one whose zero-std group share climbs —
// and serve them side by side (the healthy one at the reference paths).
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandUsageError, dirFlag, parseFlags, portFlag, portIsFree, removeOnExit } from './common.ts';
import { parseServeFlags, serve } from './serve.ts';

/** Metrics-only steps before the demo's six detailed ones: ~200 steps of metrics, dumps for the last six. */
const DEMO_HISTORY_STEPS = 194;

/** The demo's runs: folder name and whether the run collapses. */
export const DEMO_RUNS = [
  { folder: 'healthy', collapse: false },
  { folder: 'collapse', collapse: true },
] as const;

export async function demo(argv: string[]): Promise<void> {
  const { values } = parseFlags({
    args: argv,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      out: { type: 'string' },
      large: { type: 'boolean' },
    },
  });
  const flags: string[] = [];
  if (values.host !== undefined) flags.push('--host', values.host);
  if (values.port !== undefined) flags.push('--port', values.port);
  // A busy port fails now, before minutes of generating runs that could not be served.
  await portIsFree(values.host ?? '127.0.0.1', portFlag(values.port));
  if (values.out === '') throw new CommandUsageError('--out: expected a directory, got an empty value');
  const temp = values.out === undefined;
  // a directory, or where one can be made (not a file, nor under one), as --cache-dir is checked
  const given = values.out !== undefined ? dirFlag(values.out, 'out') : undefined;
  const out = given ?? mkdtempSync(join(tmpdir(), 'rlsight-demo-'));
  const dirs = DEMO_RUNS.map((run) => join(out, run.folder));
  for (const dir of dirs) if (existsSync(dir)) throw new CommandUsageError(`--out: ${dir} already exists; choose a folder without the demo runs in it`);
  if (temp) removeOnExit(out);
  const { generateDemoRun } = await import('../demo/index.ts');
  for (const [i, run] of DEMO_RUNS.entries()) {
    console.log(`generating a ${values.large ? 'large ' : ''}demo run in ${dirs[i]} …`);
    // written beside its place and moved there whole: a stopped generation leaves no half run to be served
    const partial = `${dirs[i]}.partial`;
    rmSync(partial, { recursive: true, force: true });
    await generateDemoRun(partial, { large: values.large ?? false, collapse: run.collapse, historySteps: DEMO_HISTORY_STEPS });
    renameSync(partial, dirs[i]);
  }
  // The runs' derived caches go beside them (removed with a temporary folder), not under the user's cache directory.
  await serve(parseServeFlags([...dirs, ...flags, '--cache-dir', join(out, '.rlsight-cache')]));
}
