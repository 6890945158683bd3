// What the answer commands (health, search, export) share: flag errors, opening a run, exit codes.
import { mkdirSync, readdirSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isInside, realpathOfFuture, relativeToRoots } from '../formats/fileAccess.ts';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { isFile, namesDumpFiles } from './runPaths.ts';
import type { RunSources } from '../queries/runAnswers.ts';
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A usage problem: printed as one line, exit code 2. */
export class CommandUsageError extends Error {}

/** Exit codes: 0 success, 1 a failure (a fired gate, unreadable data), 2 bad usage (a missing flag, a directory that is not a run), 3 some of the run could not be read. */
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_INCOMPLETE = 3;

/**
 * `text` safe to print on a terminal: control characters (ESC, CR, BEL, … and the C1 set) written as `\xNN`
 * (newlines too, unless `keepLines`), so a file name or a line from a run cannot move the cursor, clear the
 * screen, recolour what follows or fake a line of its own.
 */
export function terminalSafe(text: string, keepLines = false): string {
  return text.replace(keepLines ? /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g : /[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * `parseArgs`, strict, with its tokens, refusing a flag given twice that is not declared `multiple`: parseArgs
 * keeps the last silently, and which of two a user meant is a guess.
 */
export function parseFlags<T extends ParseArgsConfig>(config: T) {
  const parsed = parseArgs({ ...config, strict: true, tokens: true } as T & { strict: true; tokens: true });
  const seen = new Set<string>();
  for (const t of parsed.tokens ?? []) {
    if (t.kind !== 'option' || config.options?.[t.name]?.multiple) continue;
    if (seen.has(t.name)) throw new CommandUsageError(`--${t.name} given twice: give it once`);
    seen.add(t.name);
  }
  return parsed;
}

/** A command's flags (no positionals; an unknown flag, a missing value or a flag given twice is a usage error). */
export function flagValues<O extends NonNullable<ParseArgsConfig['options']>>(argv: string[], options: O) {
  return parseFlags({ args: argv, allowPositionals: false, options }).values;
}

/** A run directory as a command was given it, and the word its errors name it by (`--dump-details` or the command). */
export interface RunDirArg {
  dir: string;
  label: string;
}

/**
 * A command's flags and its run directory, in the two forms `serve` takes: `CMD DIR …` or `CMD --dump-details DIR …`,
 * exactly one of them. The positionals after it (search's QUERY) come back as `rest` when `rest` is set; otherwise
 * any is an extra argument. Every problem is a usage error (exit 2).
 */
export function runDirArgs<O extends NonNullable<ParseArgsConfig['options']>>(argv: string[], command: string, options: O, opts: { rest?: boolean } = {}) {
  const { values, positionals } = parseFlags({ args: argv, allowPositionals: true, options: { ...options, 'dump-details': { type: 'string', multiple: true } } as O });
  const given = ((values as Record<string, unknown>)['dump-details'] as string[] | undefined) ?? [];
  const forms = `rlsight ${command} DIR or rlsight ${command} --dump-details DIR`;
  if (given.length > 1) throw new CommandUsageError(`--dump-details given twice: one run directory is taken, as ${forms}`);
  const flagged = given[0];
  if (flagged === '') throw new CommandUsageError('--dump-details: expected a directory, got an empty value');
  if (flagged === undefined && positionals.length === 0) throw new CommandUsageError(`${command}: a run directory is required: ${forms}`);
  const run: RunDirArg = flagged === undefined ? { dir: positionals[0], label: command } : { dir: flagged, label: '--dump-details' };
  const rest = flagged === undefined ? positionals.slice(1) : positionals;
  // slime dump files given as an unquoted GLOB reach the command as several files (search would take the
  // others for its QUERY): as `serve`, one FILE.pt or one quoted GLOB
  if (flagged === undefined && run.dir.endsWith('.pt') && rest[0]?.endsWith('.pt') && isFile(rest[0])) {
    throw new CommandUsageError(`${command}: give slime dump files as one quoted GLOB ('dir/rollout_*.pt'), not several files (unquoted, the shell expands a glob into ${run.dir}, ${rest[0]}, …)`);
  }
  if (!opts.rest && rest.length > 0) throw new CommandUsageError(`${command}: unexpected argument '${rest[0]}': one run directory is taken, as ${forms}`);
  return { run, values, rest };
}

export function requireFlag(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new CommandUsageError(`--${flag} is required`);
  return value;
}

/** An integer written in decimal digits, else NaN: `Number()` would also read `0x1`, `1e0` and ` 1 ` as 1. */
export function decimalInt(raw: string): number {
  return /^[+-]?\d+$/.test(raw) ? Number(raw) : Number.NaN;
}

/** A number flag (`int`: decimal digits only) within `[min, max]`, `fallback` when absent; else a usage error naming it. */
export function numberFlag(name: string, raw: string | undefined, fallback: number, opts: { int?: boolean; min?: number; max?: number } = {}): number {
  if (raw === undefined) return fallback;
  const v = opts.int ? decimalInt(raw) : Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || (opts.int && !Number.isSafeInteger(v))) {
    throw new CommandUsageError(`--${name}: expected ${opts.int ? 'an integer' : 'a number'}, got '${raw}'`);
  }
  if ((opts.min !== undefined && v < opts.min) || (opts.max !== undefined && v > opts.max)) {
    throw new CommandUsageError(`--${name}: ${v} is out of range [${opts.min ?? '-inf'}, ${opts.max ?? 'inf'}]`);
  }
  return v;
}

/** `--port N`: an integer in [0, 65535], `fallback` when absent. */
export function portFlag(raw: string | undefined, fallback = 7788): number {
  return numberFlag('port', raw, fallback, { int: true, min: 0, max: 65535 });
}

export function intFlag(raw: string | undefined, flag: string, min = 0): number | undefined {
  if (raw === undefined) return undefined;
  const v = decimalInt(raw);
  if (!Number.isSafeInteger(v) || v < min) throw new CommandUsageError(`--${flag}: expected an integer >= ${min}, got '${raw}'`);
  return v;
}

export interface OpenedRun {
  answers: RunSources;
  close(): Promise<void>;
}

/** `--cache-dir DIR` resolved: a directory, or where one can be made (not a file, nor under one). */
export function cacheDirFlag(raw: string | undefined): string | undefined {
  return raw === undefined ? undefined : dirFlag(raw, 'cache-dir');
}

/** The nearest path at or above `abs` that exists, and whether it is a directory (nothing existing: the root, a directory). */
function nearestExisting(abs: string): { path: string; dir: boolean } {
  for (let p = abs; ; p = dirname(p)) {
    try {
      return { path: p, dir: statSync(p).isDirectory() };
    } catch {
      if (dirname(p) === p) return { path: p, dir: true };
    }
  }
}

/** `--tensorboard LOGDIR` (serve, export): an existing directory, resolved; a usage error naming the flag otherwise. */
export function tensorboardFlag(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const dir = resolve(raw);
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // (`rlsight collect --tensorboard` waits for a logdir to appear; a reader reads what is there)
    throw new CommandUsageError(`--tensorboard: no such directory: ${raw}`);
  }
  if (!isDir) throw new CommandUsageError(`--tensorboard: ${raw} is not a directory`);
  return dir;
}

/** A directory flag's value resolved: a directory, or where one can be made (not a file, nor under one). */
export function dirFlag(raw: string, flag: string): string {
  if (raw === '') throw new CommandUsageError(`--${flag}: expected a directory, got an empty value`);
  const abs = resolve(raw);
  const existing = nearestExisting(abs);
  if (existing.dir) return abs;
  throw new CommandUsageError(existing.path === abs ? `--${flag}: ${raw} is a file; give a directory` : `--${flag}: ${existing.path} is a file, so ${raw} cannot be made under it`);
}

/** The names in a directory; none when it does not exist (or is no directory). */
export function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * Opens the run a command was given for reading (never written to), in the forms `serve` takes: a run directory,
 * or slime dump files (FILE.pt or a quoted GLOB; not after --dump-details), with a `--tensorboard` logdir's scalars
 * (checked by `tensorboardFlag`) among its metrics; errors name it by `label`, where it was given.
 */
export async function openRunDir({ dir, label }: RunDirArg, cacheDir?: string, tensorboard?: string): Promise<OpenedRun> {
  const cache = cacheDirFlag(cacheDir);
  const { openRunArgument } = await import('./openRun.ts');
  const opened = await openRunArgument(dir, { cacheDir: cache, dumpFiles: label !== '--dump-details', tensorboard }).catch((e: Error & { param?: string }) => {
    throw e.param ? new CommandUsageError(`--${e.param === 'cacheDir' ? 'cache-dir' : e.param}: ${e.message}`) : e;
  });
  if ('problem' in opened) throw new CommandUsageError(`${label}: ${opened.problem}`);
  return {
    answers: opened.run,
    close: () => opened.run.close(),
  };
}

let stdoutGone = false;
let stdoutGuarded = false;

/**
 * A reader that stops reading (`rlsight search … | head -1`) ends what a command prints, quietly: stdout's
 * EPIPE is not the command's failure (no stack trace, no exit 1, which says "nothing matched" for search);
 * whatever is still to print is dropped, the command ends with the exit code it has, and one that could go on
 * scanning asks `stdoutClosed()` to stop early. Any other failure to write stdout (a full disk) is said in one
 * line, exit 1. Every command gets this from `main`.
 */
export function quietWhenStdoutCloses(): void {
  if (stdoutGuarded) return;
  stdoutGuarded = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') {
      stdoutGone = true;
      return;
    }
    console.error(`rlsight: cannot write the output: ${err.message}`);
    process.exit(EXIT_FAILED);
  });
}

/** Whether stdout's reader has gone (see `quietWhenStdoutCloses`): nothing more printed there is read. */
export function stdoutClosed(): boolean {
  return stdoutGone;
}

/** Runs a command body, turning its failures into a message and an exit code. */
export async function runCommand(body: () => Promise<number>): Promise<number> {
  quietWhenStdoutCloses();
  try {
    return await body();
  } catch (err) {
    if (err instanceof CommandUsageError || (err as NodeJS.ErrnoException)?.code?.startsWith?.('ERR_PARSE_ARGS')) {
      console.error(`rlsight: ${terminalSafe((err as Error).message, true)}`);
      return EXIT_USAGE;
    }
    if ((err as { param?: string }).param !== undefined && ((err as Error).name === 'BadArgument' || (err as Error).name === 'RefusedOption')) {
      console.error(`rlsight: ${terminalSafe((err as Error).message, true)}`);
      return EXIT_USAGE;
    }
    console.error(`rlsight: ${terminalSafe(err instanceof Error ? err.message : String(err), true)}`);
    return EXIT_FAILED;
  }
}

/** A host name or IPv4 address (letters, digits, dots, dashes), or an IPv6 address (hex digits and colons, in brackets). */
export function isHostName(host: string, bracketed = false): boolean {
  // (an underscore too: container service names such as `sglang_router` resolve)
  return bracketed ? /^[0-9A-Fa-f:.]+(%[\w.-]+)?$/.test(host) : /^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$/.test(host);
}

/** `--host HOST` (a server's bind address): a host name or address, an IPv6 one bare or in brackets; 127.0.0.1 when absent. */
export function hostFlag(raw: string | undefined): string {
  if (raw === undefined) return '127.0.0.1';
  const bare = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw;
  if (!isHostName(bare, bare.includes(':'))) {
    throw new CommandUsageError(`--host: expected a host name or address to listen on (127.0.0.1, 0.0.0.0, ::, a name of this machine), got '${raw}'`);
  }
  return bare;
}

/**
 * Checks, before a server opens anything, that `--host`/`--port` can be listened on: a name that does not
 * resolve, an address that is not this machine's, or a port that needs privileges are usage errors naming the
 * flag; a busy port rejects with EADDRINUSE (which `main` reports naming `--port`).
 */
export async function checkListen(host: string, port: number): Promise<void> {
  try {
    await portIsFree(host, port);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NONAME') {
      throw new CommandUsageError(`--host: cannot listen on ${host}: the name does not resolve (${code})`);
    }
    if (code === 'EADDRNOTAVAIL') throw new CommandUsageError(`--host: cannot listen on ${host}: not an address of this machine (0.0.0.0 listens on all of them)`);
    if (code === 'EACCES') throw new CommandUsageError(`--port: no permission to listen on port ${port} of ${host} (ports below 1024 need privileges)`);
    throw err;
  }
}

/**
 * Resolves when `host:port` can be bound (port 0: when `host` can be listened on at all); rejects with the
 * listen error (EADDRINUSE, ENOTFOUND, EADDRNOTAVAIL) otherwise.
 */
export function portIsFree(host: string, port: number): Promise<void> {
  return new Promise((ok, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => ok()));
  });
}

/**
 * Removes a temp folder when the process ends: on exit, and on SIGINT/SIGTERM that arrive before a server
 * installs its own handlers (which then exit through `process.exit`, so the exit hook still runs).
 */
export function removeOnExit(dir: string): void {
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const interrupted = (signal: NodeJS.Signals): void => {
    // Only while nobody else handles the signal: a server's handler closes it and exits by itself.
    if (process.listenerCount(signal) === 1) process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGINT', interrupted);
  process.on('SIGTERM', interrupted);
}

/**
 * Says on stderr what could not be read while a command answered (the run's own warnings: skipped lines,
 * damaged or unreadable files; and `more` of the command's own), each once; EXIT_INCOMPLETE when there was
 * any, else 0. What was written holds everything else.
 */
export function incompleteness(run: (Pick<RunSources, 'warnings'> & { roots?: readonly string[] }) | null, more: readonly string[] = []): number {
  // files named relative to the run, as the server names them
  const rel = (w: string): string => relativeToRoots(w, run?.roots ?? []);
  const own = more.map(rel);
  // a run warning one of the command's own already says (naming the file as the run read it) is said once
  const said = [...new Set([...own, ...(run?.warnings() ?? []).map(rel).filter((w) => !own.some((m) => m.includes(w)))])];
  for (const w of said) console.error(`warning: ${terminalSafe(w)}`);
  return said.length > 0 ? EXIT_INCOMPLETE : 0;
}

export interface ExportKind {
  /** One usage line (after `rlsight export`). */
  usage: string;
  run(argv: string[]): Promise<number>;
}

/**
 * Where `--out` asks a command to write, checked before any reading: outside the run it reads (a run is
 * never written, however a link leads into it), a file where a file is asked (`kind: 'file'`) or a directory
 * where a directory is, and under a path whose existing part is a directory. Usage errors naming `--out`.
 */
export function outPath(raw: string | undefined, run: RunDirArg, kind: 'file' | 'dir', logdir?: string): string {
  const out = resolve(requireFlag(raw, 'out'));
  // with links resolved where they exist (a missing run is the run's own error, reported when it is opened;
  // a file on the way to `--out` is reported below)
  const resolved = (path: string, real: (p: string) => string): string => {
    try {
      return real(path);
    } catch {
      return path;
    }
  };
  const real = resolved(out, realpathOfFuture);
  // slime dump files (FILE.pt or a GLOB) are a run of their folder's
  const runDir = namesDumpFiles(run.dir) ? dirname(run.dir) : run.dir;
  const runReal = resolved(resolve(runDir), realpathSync);
  if (isInside(runReal, real)) throw new CommandUsageError(`--out: ${raw} is inside the run directory ${runDir}; a run is read, never written`);
  // the `--tensorboard` logdir is read with the run (an event file written into it would be read back the next time)
  if (logdir !== undefined && isInside(resolved(logdir, realpathSync), real)) throw new CommandUsageError(`--out: ${raw} is inside the --tensorboard logdir ${logdir}; it is read, never written`);
  if (kind === 'dir') return dirFlag(raw!, 'out');
  const existing = nearestExisting(out);
  if (existing.path === out && existing.dir) throw new CommandUsageError(`--out: ${raw} is a directory; give the name of the file to write`);
  if (existing.path !== out && !existing.dir) throw new CommandUsageError(`--out: ${existing.path} is a file, so ${raw} cannot be made under it`);
  return out;
}

/** Writes `bytes` to `path` whole (a temp file renamed into place, so a reader never sees half a file). */
export function writeWhole(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.partial`;
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(tmp, bytes);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'EACCES' ? 'permission denied' : code === 'EROFS' ? 'read-only file system' : (e as Error).message;
    throw new Error(`--out: cannot write ${path}: ${why}`);
  }
}
