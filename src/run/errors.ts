// Typed failures of reading a run and answering about it; the server maps each class to one HTTP status.

/** A request argument that cannot be used: malformed, out of range, or unknown (HTTP 400 naming it). */
export class BadArgument extends Error {
  override readonly name = 'BadArgument';
  constructor(
    /** The parameter at fault (`t1`, `lanes`, `rollout_id`, …). */
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

/** The dump files contradict each other (a train shard naming a sample the rollout lacks, TP peers disagreeing) (HTTP 500). */
export class DumpInconsistent extends Error {
  override readonly name = 'DumpInconsistent';
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
  }
}
