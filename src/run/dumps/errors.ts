// Typed failures of the dump read path; the server maps each class to one HTTP status.

/** A dump file younger than the freshness window failed to decode: training is still writing it (HTTP 503). */
export class DumpStillWriting extends Error {
  override readonly name = 'DumpStillWriting';
  constructor(readonly file: string, readonly cause?: unknown) {
    super(`dump still being written: ${file}`);
  }
}

/** A requested rollout, sample, sidecar or file does not exist (HTTP 404). */
export class DumpNotFound extends Error {
  override readonly name = 'DumpNotFound';
}

/** A request parameter is malformed or out of range (HTTP 400). */
export class BadArgument extends Error {
  override readonly name = 'BadArgument';
  constructor(readonly parameter: string, message: string) {
    super(message);
  }
}

/** The dump files contradict each other (a train shard naming a sample the rollout lacks, TP peers disagreeing) (HTTP 500). */
export class DumpInconsistent extends Error {
  override readonly name = 'DumpInconsistent';
  constructor(readonly file: string, message: string) {
    super(`${file}: ${message}`);
  }
}
