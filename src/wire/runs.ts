// `/api/runs`: the runs one server answers about, each also under `/api/runs/{id}/…`.
import type { StepCoverage } from './answers.ts';

/**
 * live: followed and still writing; quiet: followed, nothing new for 10 minutes, and not known to have ended (its
 * trainer may be hung); finished: not followed, or its collector stopped; damaged: reading met problems (see `warnings`).
 */
export type RunStatus = 'live' | 'quiet' | 'finished' | 'damaged';

export type RunConfigValue = string | number | boolean;

export interface RunListing {
  /**
   * The run's name in URLs (`/api/runs/{id}/…`): its folder name; under `--runs ROOT`, when another run folder
   * there has that name too, its path below the root (`teamA/healthy` is `teamA-healthy`).
   */
  id: string;
  /**
   * Its folder: the path below `--runs ROOT`; for a run named on the command line, the folder's name with as many
   * folders above it as tell it from the other runs named. Never a whole path of the server's machine.
   */
  folder?: string;
  /** `meta.json`'s run name, else the folder name. */
  name: string;
  /** When it began: `meta.json`'s start, or its first record when that is earlier (a resumed run rewrites the start). */
  start_ts: number | null;
  /** GPU lanes its telemetry knows; null when it knows none (the count is unknown, not zero). */
  gpus: number | null;
  /** Train steps it logged or dumped. */
  steps: number;
  /** The formats whose files it holds (`miles`, …). */
  formats: string[];
  /** Whether the reference paths (`/api/…`) answer for it. */
  primary: boolean;
  /** Newest data written (telemetry edge), or null when the run has no timestamps. */
  end_ts: number | null;
  status: RunStatus;
  /** What reading it met (skipped lines, unreadable files): why it is damaged. */
  warnings: string[];
  /** `meta.json`'s scalar args (model, learning rate, batch and group size, parallelism, …). */
  config: Record<string, RunConfigValue>;
  /** The newest value of each metric asked for with `?latest=KEY,KEY` (empty without it). */
  latest: Record<string, number | null>;
  /**
   * Present while the server still reads a slime or collected run's steps in the background: its span (a run
   * without telemetry) and the `latest` values computed from its steps are those of the steps read so far.
   */
  coverage?: StepCoverage;
}

export interface RunsAnswer {
  runs: RunListing[];
}
