// `/api/runs`: the runs one server answers about, each also under `/api/runs/{id}/…`.

export interface RunListing {
  /** The run's name in URLs (`/api/runs/{id}/…`): its folder name, made unique. */
  id: string;
  /** `meta.json`'s run name, else the folder name. */
  name: string;
  start_ts: number | null;
  /** GPU lanes its telemetry knows. */
  gpus: number;
  /** Train steps it logged or dumped. */
  steps: number;
  /** The formats whose files it holds (`miles`, …). */
  formats: string[];
  /** Whether the reference paths (`/api/…`) answer for it. */
  primary: boolean;
}

export interface RunsAnswer {
  runs: RunListing[];
}
