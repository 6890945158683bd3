// Typed failures of reading a run; the server maps each class to one HTTP status (a query's argument errors are
// BadArgument, beside the limits in queries/limits.ts).

/**
 * A value the run layer was handed that it cannot use: an open option (a cache directory inside the run, a
 * negative tensor LRU) or an id that is no integer (HTTP 400, or a usage error on the command line, naming `param`).
 */
export class RefusedOption extends Error {
  override readonly name = 'RefusedOption';
  constructor(
    /** The option or argument at fault (`cacheDir`, `tensorLru`, `rollout_id`, …). */
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

/** A requested run, step, sample, sidecar or file does not exist (HTTP 404). */
export class NotFound extends Error {
  override readonly name = 'NotFound';
}

/**
 * A run file modified less than this long ago that does not read whole (a dump that fails to decode, a
 * telemetry file without its last newline) is taken to be still being written.
 */
export const FRESH_SECONDS = 60;

/**
 * Whether a file that failed to read (`err`), modified at `mtimeMs`, is taken to be still being written: it is
 * younger than the freshness window at `nowMs`, and not a refused file (a directory, a FIFO, a link out of the
 * run, no permission), which no amount of waiting makes readable.
 */
export function stillBeingWritten(err: unknown, mtimeMs: number, nowMs: number): boolean {
  return !isRefusedFile(err) && nowMs - mtimeMs < FRESH_SECONDS * 1000;
}

/** A dump file younger than the freshness window failed to decode: training is still writing it (HTTP 503). */
export class DumpStillWriting extends Error {
  override readonly name = 'DumpStillWriting';
  constructor(
    readonly file: string,
    readonly cause?: unknown,
  ) {
    super(`dump still being written: ${file}`);
  }
}

/** The dump files contradict each other or one is malformed (a train shard naming a sample the rollout lacks, TP peers disagreeing) (HTTP 422). */
export class DumpInconsistent extends Error {
  override readonly name = 'DumpInconsistent';
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
  }
}

/** A file that is not a readable slime rollout dump (HTTP 422; the CLI prints it and exits non-zero). */
export class SlimeDumpError extends Error {
  override readonly name = 'SlimeDumpError';
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(`${file}: ${problem}`);
  }
}

/** An outside source a run's answers read (Prometheus for `--prometheus URL`) cannot be reached or answered badly (HTTP 503). */
export class SourceUnavailable extends Error {
  override readonly name: string = 'SourceUnavailable';
}

/**
 * Errors that mean "a file of the run is damaged", each naming the file and the problem: the decoders' own
 * (zip, pickle, torch, parquet), a refused file (not regular, or a symlink out of the run) and inconsistent
 * dumps. Matched by name too, since an error raised on a decode worker crosses back as a plain Error.
 */
const DAMAGE_ERRORS = new Set(['ZipError', 'PickleError', 'TorchFormatError', 'ParquetError', 'FileRefused', 'DumpInconsistent', 'SlimeDumpError']);
/** File-system failures that come from the run's layout: a directory where a file belongs, a symlink loop, no permission. */
const DAMAGE_CODES = new Set(['EISDIR', 'ELOOP', 'ENOTREG', 'EOUTSIDE', 'ENXIO', 'EACCES', 'EPERM']);

/** A file the run's layout makes unreadable as asked (a directory, a FIFO, a link out of the run, no permission): waiting changes nothing. */
export function isRefusedFile(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  return err.name === 'FileRefused' || (code !== undefined && DAMAGE_CODES.has(code));
}

/**
 * Why a step a whole-run answer reads cannot be read now (its dump still being written, or damaged: the
 * answer leaves it out and names it), or null for any other failure (which is the answer's own).
 */
export function unreadStepProblem(err: unknown): string | null {
  return err instanceof DumpStillWriting ? err.message : damageOf(err);
}

/** What a thrown error says is damaged (`file: problem`), or null when it is not about a damaged file (HTTP 422 vs the rest). */
export function damageOf(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  if (err instanceof DumpStillWriting) return null;
  if (DAMAGE_ERRORS.has(err.name)) return err.message;
  const code = (err as NodeJS.ErrnoException).code;
  if (code && DAMAGE_CODES.has(code)) {
    const path = (err as NodeJS.ErrnoException).path;
    return path && !err.message.includes(path) ? `${path}: ${err.message}` : err.message;
  }
  return null;
}
