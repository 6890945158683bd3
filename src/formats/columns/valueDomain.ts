// The domain of each telemetry value: a row outside it (a GPU index of -1 or 2^53+7, a timestamp of 1e300
// or far in the future, a utilisation of 1e308, a phase ending before it starts) is dropped and reported
// with its line, whenever its partition is parsed, rather than served.

/** GPU indices run 0..MAX_GPU_INDEX on one node (NVML numbers a node's devices from 0; 1,024 is far past any). */
export const MAX_GPU_INDEX = 1023;
/** How far past the reader's clock a timestamp may lie (clocks of a cluster and a laptop differ). */
const FUTURE_SLACK_S = 7 * 86400;

/** The latest plausible timestamp now (epoch seconds). */
export function tsHorizon(): number {
  return Date.now() / 1000 + FUTURE_SLACK_S;
}

export function tsProblem(ts: number, horizon: number): string | null {
  if (!Number.isFinite(ts) || ts < 0) return `timestamp ${ts} is not a time: row dropped`;
  if (ts > horizon) return `timestamp ${ts} is in the future: row dropped`;
  return null;
}

export function gpuProblem(gpu: number): string | null {
  return Number.isInteger(gpu) && gpu >= 0 && gpu <= MAX_GPU_INDEX ? null : `GPU index ${gpu} is outside 0..${MAX_GPU_INDEX}: row dropped`;
}

export function gpuRowProblem(ts: number, gpu: number, util: number, horizon: number): string | null {
  const t = tsProblem(ts, horizon);
  if (t !== null) return t;
  const g = gpuProblem(gpu);
  if (g !== null) return g;
  // NaN (no reading) is kept; a reading outside 0-100 % is not one.
  if (util < 0 || util > 100) return `utilisation ${util} is outside 0..100: row dropped`;
  return null;
}

/** A closed phase must end at or after its start (`openT1` marks one still running). */
export function phaseProblem(t0: number, t1: number, openT1: number, horizon: number): string | null {
  const a = tsProblem(t0, horizon);
  if (a !== null) return a;
  if (t1 === openT1) return null;
  const b = tsProblem(t1, horizon);
  if (b !== null) return b;
  return t1 < t0 ? `phase ends (t1 ${t1}) before it starts (t0 ${t0}): row dropped` : null;
}
