// A step's figures computed from its sample rows (and its groups): what an eval step shows, the dump/* aggregates
// covering training steps only, and the train step's sample count and staleness, which dump/* has not.
import type { Cell, TableRow as Row } from '../../../src/wire/index.ts';

export interface StepFigures {
  samples: number;
  reward_mean: number | null;
  reward_std: number | null;
  response_length_mean: number | null;
  truncated_frac: number | null;
  /** Groups of two or more samples whose rewards do not vary, of all such groups. */
  zero_std: { zero: number; groups: number };
  mixed_version_frac: number | null;
  avg_staleness: number | null;
  mean_abs_lp_diff: number | null;
  mean_entropy: number | null;
}

const value = (v: Cell | undefined): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'boolean' ? Number(v) : null);

function meanOf(xs: (number | null)[]): number | null {
  let s = 0;
  let n = 0;
  for (const x of xs)
    if (x !== null) {
      s += x;
      n++;
    }
  return n ? s / n : null;
}

/** Sample standard deviation (ddof 1), as the server's dump/reward_std. */
function stdOf(xs: (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null);
  if (v.length < 2) return null;
  const m = v.reduce((a, b) => a + b, 0) / v.length;
  return Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1));
}

/** Groups of two or more samples: a lone sample has no reward spread, so it is not counted as a group. */
export function realGroups<R extends Row>(groups: readonly R[]): R[] {
  return groups.filter((g) => typeof g.n === 'number' && g.n >= 2);
}

/** Means over the rows with a value (nulls dropped); the reward is `reward` on an eval step, else `raw_reward`. */
export function stepFigures(rows: readonly Row[], groups: readonly Row[], evaluation: boolean): StepFigures {
  const col = (c: string) => rows.map((r) => value(r[c]));
  const rewards = col(evaluation ? 'reward' : 'raw_reward');
  const real = realGroups(groups);
  return {
    samples: rows.length,
    reward_mean: meanOf(rewards),
    reward_std: stdOf(rewards),
    response_length_mean: meanOf(col('response_length')),
    // the trainer's flag, else the rollout's status
    truncated_frac: meanOf(rows.map((r) => value(r.truncated) ?? (typeof r.status === 'string' ? Number(r.status === 'truncated') : null))),
    zero_std: { zero: real.filter((g) => g.zero_std === true).length, groups: real.length },
    mixed_version_frac: meanOf(col('mixed_version')),
    avg_staleness: meanOf(col('staleness')),
    mean_abs_lp_diff: meanOf(col('mean_abs_lp_diff')),
    mean_entropy: meanOf(col('mean_entropy')),
  };
}

/** A sample's weight versions as the table shows them: `196–197` when it spans several, else the one. */
export function versionSpan(row: Row): { text: string; title: string } | null {
  const last = row.weight_version;
  if (last === null || last === undefined) return null;
  const min = row.weight_version_min;
  const lastN = Number(last);
  if (min === null || min === undefined || !Number.isFinite(lastN) || Number(min) === lastN) return { text: String(last), title: `weight version ${last}` };
  const lo = Number(min);
  return { text: `${lo}–${lastN}`, title: `generated across weight versions: the oldest ${lo}, the newest ${lastN} (weight_version_min – weight_version)` };
}
