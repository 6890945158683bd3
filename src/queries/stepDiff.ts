// What changed between two steps (of one run or of two): per-sample distributions with their deltas, GRPO
// groups whose outcome flipped (matched by prompt), logged and dump/* metrics side by side, and the samples
// that moved most. Pure over the step tables, prompts and step metrics handed to it.
import type { Cell, DistributionDiff, FlippedGroup, GroupOutcome, MetricPair, MovedSample, SampleDiff, StepDiff, StepRef, TableRow } from '../wire/index.ts';
import type { RunSources } from './runAnswers.ts';
import { NotFound } from '../run/errors.ts';
import { alignSeries, alignTokens } from './tokenAlignment.ts';

export type { StepDiff, SampleDiff } from '../wire/index.ts';

/** Bins of each overlaid histogram. */
const BINS = 24;
/** Samples listed as having moved most. */
const MOVED_LISTED = 12;
/** Characters of a prompt shown with a group. */
const PROMPT_SHOWN = 160;

/** One side of a step diff: its samples, groups' prompts and the step's metrics. */
export interface DiffSide {
  ref: StepRef;
  rows: readonly TableRow[];
  /** Sample index → its prompt text (the match key for groups). */
  prompts: ReadonlyMap<number, string>;
  /** Logged and dump/* values of this step. */
  metrics: ReadonlyMap<string, number>;
  /** The summary's `staleness_from`: set when its staleness counts weight updates, not rollout steps. */
  stalenessFrom?: 'newest_version';
}

/** How a side counts staleness, in words. */
function stalenessUnit(side: DiffSide): string {
  return side.stalenessFrom === 'newest_version' ? "weight updates behind its step's newest version" : 'rollout steps behind';
}

const DISTRIBUTIONS: { metric: string; label: string; columns: string[] }[] = [
  { metric: 'reward', label: 'reward', columns: ['raw_reward', 'reward'] },
  { metric: 'response_length', label: 'response length', columns: ['response_length'] },
  { metric: 'mean_abs_lp_diff', label: 'mean |lp diff|', columns: ['mean_abs_lp_diff'] },
  { metric: 'mean_entropy', label: 'mean entropy', columns: ['mean_entropy'] },
  { metric: 'truncated', label: 'truncated', columns: ['truncated'] },
  { metric: 'staleness', label: 'staleness', columns: ['staleness'] },
];

function num(v: Cell | undefined): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return null;
}

/** The first of `columns` any row has a number in; its values. */
function values(rows: readonly TableRow[], columns: readonly string[]): number[] {
  for (const c of columns) {
    const out: number[] = [];
    for (const r of rows) {
      const v = num(r[c]);
      if (v !== null) out.push(v);
    }
    if (out.length) return out;
  }
  return [];
}

function mean(xs: readonly number[]): number | null {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

function median(xs: readonly number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Shared bins over both sides (integer-valued data gets integer-aligned bins), counts per side. */
export function distribution(metric: string, label: string, a: readonly number[], b: readonly number[]): DistributionDiff {
  const all = [...a, ...b];
  const lo = all.length ? Math.min(...all) : 0;
  const hi = all.length ? Math.max(...all) : 0;
  const integral = all.every(Number.isInteger);
  let bins = BINS;
  let width = (hi - lo) / bins;
  if (integral) {
    const span = hi - lo + 1;
    bins = Math.min(BINS, span);
    width = span / bins;
  } else if (width === 0) {
    bins = 1;
    width = 1;
  }
  const start = integral ? lo - 0.5 : lo;
  const edges = Array.from({ length: bins + 1 }, (_, i) => start + i * width);
  const count = (xs: readonly number[]) => {
    const c = new Array<number>(bins).fill(0);
    for (const x of xs) c[Math.min(bins - 1, Math.max(0, Math.floor((x - start) / width)))]++;
    return c;
  };
  const ma = mean(a);
  const mb = mean(b);
  return {
    metric,
    label,
    a: { n: a.length, mean: ma, median: median(a) },
    b: { n: b.length, mean: mb, median: median(b) },
    delta_mean: ma !== null && mb !== null ? mb - ma : null,
    edges,
    integral,
    counts_a: count(a),
    counts_b: count(b),
  };
}

/** A group's outcome: every reward above 0 (solved), none (failed), or some (mixed). */
export function outcomeOf(rewards: readonly number[]): GroupOutcome {
  if (rewards.every((r) => r > 0)) return 'solved';
  if (rewards.every((r) => r <= 0)) return 'failed';
  return 'mixed';
}

interface GroupView {
  group_index: number | null;
  prompt: string;
  rows: TableRow[];
  rewards: number[];
}

function rewardOf(r: TableRow): number | null {
  return num(r.raw_reward) ?? num(r.reward);
}

/**
 * The step's groups keyed by prompt text (the match key across steps and runs); groups sharing a prompt are
 * told apart by their order (`#2`, `#3`, …). Samples without a prompt are left out.
 */
function groupsByPrompt(side: DiffSide): Map<string, GroupView> {
  const byGroup = new Map<number | null, GroupView>();
  for (const r of side.rows) {
    const prompt = side.prompts.get(r.sample_index as number);
    if (prompt === undefined) continue;
    const gi = num(r.group_index);
    let g = byGroup.get(gi);
    if (!g) byGroup.set(gi, (g = { group_index: gi, prompt, rows: [], rewards: [] }));
    g.rows.push(r);
    const rw = rewardOf(r);
    if (rw !== null) g.rewards.push(rw);
  }
  const out = new Map<string, GroupView>();
  const seen = new Map<string, number>();
  for (const g of byGroup.values()) {
    const k = (seen.get(g.prompt) ?? 0) + 1;
    seen.set(g.prompt, k);
    out.set(k === 1 ? g.prompt : `${g.prompt}\n#${k}`, g);
  }
  return out;
}

function extreme(rows: readonly TableRow[], best: boolean): number | null {
  let pick: TableRow | null = null;
  for (const r of rows) {
    const v = rewardOf(r);
    if (v === null) continue;
    const p = pick ? rewardOf(pick)! : null;
    if (p === null || (best ? v > p : v < p)) pick = r;
  }
  return pick ? (pick.sample_index as number) : null;
}

function groupSide(g: GroupView) {
  return {
    group_index: g.group_index,
    n: g.rows.length,
    reward_mean: mean(g.rewards),
    outcome: outcomeOf(g.rewards),
    best_sample: extreme(g.rows, true),
    worst_sample: extreme(g.rows, false),
  };
}

const shown = (p: string) => (p.length > PROMPT_SHOWN ? `${p.slice(0, PROMPT_SHOWN)}…` : p);

/** The groups present on both sides (by prompt) whose outcome differs, in A's group order. */
export function flippedGroups(a: DiffSide, b: DiffSide): { flipped: FlippedGroup[]; matched: number } {
  const ga = groupsByPrompt(a);
  const gb = groupsByPrompt(b);
  const flipped: FlippedGroup[] = [];
  let matched = 0;
  for (const [prompt, x] of ga) {
    const y = gb.get(prompt);
    if (!y || x.rewards.length === 0 || y.rewards.length === 0) continue;
    matched++;
    const sa = groupSide(x);
    const sb = groupSide(y);
    if (sa.outcome !== sb.outcome) flipped.push({ prompt: shown(prompt), a: sa, b: sb });
  }
  return { flipped, matched };
}

/**
 * Samples paired across the sides: the same sample index when both sides hold it with the same prompt (two
 * runs over the same data), else by prompt and position within the group; the pairs whose reward (then
 * length) changed most.
 */
export function movedSamples(a: DiffSide, b: DiffSide): MovedSample[] {
  const ga = groupsByPrompt(a);
  const gb = groupsByPrompt(b);
  const pairs: MovedSample[] = [];
  for (const [prompt, x] of ga) {
    const y = gb.get(prompt);
    if (!y) continue;
    const byIndex = new Map(y.rows.map((r) => [r.sample_index as number, r]));
    const sameIds = x.rows.every((r) => byIndex.has(r.sample_index as number));
    const ys = [...y.rows].sort((p, q) => (p.sample_index as number) - (q.sample_index as number));
    const xs = [...x.rows].sort((p, q) => (p.sample_index as number) - (q.sample_index as number));
    xs.forEach((r, i) => {
      const o = sameIds ? byIndex.get(r.sample_index as number) : ys[i];
      if (!o) return;
      const ra = rewardOf(r);
      const rb = rewardOf(o);
      const la = num(r.response_length);
      const lb = num(o.response_length);
      pairs.push({
        prompt: shown(prompt),
        a: { sample_index: r.sample_index as number, reward: ra, response_length: la },
        b: { sample_index: o.sample_index as number, reward: rb, response_length: lb },
        delta_reward: ra !== null && rb !== null ? rb - ra : null,
        delta_length: la !== null && lb !== null ? lb - la : null,
      });
    });
  }
  const score = (m: MovedSample): [number, number] => [Math.abs(m.delta_reward ?? 0), Math.abs(m.delta_length ?? 0)];
  return pairs
    .sort((p, q) => {
      const [r1, l1] = score(p);
      const [r2, l2] = score(q);
      return r2 - r1 || l2 - l1 || p.a.sample_index - q.a.sample_index;
    })
    .slice(0, MOVED_LISTED);
}

/** Every key either side logged, with both values and the change. */
export function metricPairs(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): MetricPair[] {
  const keys = [...new Set([...a.keys(), ...b.keys()])].sort();
  return keys.map((key) => {
    const x = a.get(key) ?? null;
    const y = b.get(key) ?? null;
    return { key, a: x, b: y, delta: x !== null && y !== null ? y - x : null };
  });
}

export function stepDiff(a: DiffSide, b: DiffSide): StepDiff {
  const distributions = DISTRIBUTIONS.map((d) => {
    const dist = distribution(d.metric, d.label, values(a.rows, d.columns), values(b.rows, d.columns));
    // staleness counted in rollout steps on one side and in weight updates on the other (a miles and a slime run): no change between them
    if (d.metric !== 'staleness' || a.stalenessFrom === b.stalenessFrom) return dist;
    return { ...dist, delta_mean: null, note: `not comparable: A counts ${stalenessUnit(a)}, B counts ${stalenessUnit(b)}` };
  });
  const { flipped, matched } = flippedGroups(a, b);
  return { a: a.ref, b: b.ref, distributions, groups_matched: matched, flipped, metrics: metricPairs(a.metrics, b.metrics), moved: movedSamples(a, b) };
}

/**
 * The part of a prompt that names its group across steps: the turns before the first assistant turn. A
 * multi-turn sample's dumped prompt also holds the turns it has already taken, and a group carried over to
 * the next step has taken more of them there. Sample texts write a message list one `role: …` line per turn.
 */
export function initialPrompt(prompt: string): string {
  const cut = prompt.startsWith('assistant: ') ? 0 : prompt.indexOf('\nassistant: ');
  return cut < 0 ? prompt : prompt.slice(0, cut);
}

/** Reads one side of a diff from a run. */
export async function diffSide(run: RunSources, step: number, evaluation: boolean, name = run.name): Promise<DiffSide> {
  const summary = await run.summary(step, evaluation);
  const texts = await run.sampleTexts(step, evaluation);
  const prompts = new Map<number, string>();
  for (const t of texts) if (t.fields.prompt !== undefined) prompts.set(t.sample_index, initialPrompt(t.fields.prompt));
  return {
    ref: { run: name, step, evaluation },
    rows: summary.rows,
    prompts,
    metrics: evaluation ? new Map() : await run.stepMetrics(step),
    ...(summary.staleness_from ? { stalenessFrom: summary.staleness_from } : {}),
  };
}

// ---- sample diff ------------------------------------------------------------------------------------

const SERIES = ['lp_diff', 'entropy', 'train_log_probs', 'rollout_log_probs', 'advantages'] as const;

/** The first position where two sequences differ (the shorter one's length when one extends the other), or null when equal. */
export function firstDivergence<T>(a: ArrayLike<T>, b: ArrayLike<T>): number | null {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? null : n;
}

/** A group's best and worst samples (by reward; ties to the lowest index), for the default sample diff. */
export function bestAndWorst(rows: readonly TableRow[], group: number): [number, number] {
  const members = rows.filter((r) => num(r.group_index) === group);
  if (members.length === 0) throw new NotFound(`group ${group} has no samples in this step`);
  const best = extreme(members, true) ?? (members[0].sample_index as number);
  const worst = extreme(members, false) ?? (members[members.length - 1].sample_index as number);
  if (best !== worst || members.length < 2) return [best, worst];
  // Every reward alike (a zero-std group): compare two different samples all the same.
  return [members[0].sample_index as number, members[members.length - 1].sample_index as number];
}

export interface SampleRef {
  run: RunSources;
  /** The run's id, when the two sides may be different runs. */
  id?: string;
  step: number;
  sampleIndex: number;
  evaluation: boolean;
}

async function sampleSide(ref: SampleRef, label: string) {
  // A missing step or sample says which side named it.
  const named = (e: unknown) => {
    throw e instanceof NotFound ? new NotFound(`sample ${label}${ref.id === undefined ? '' : ` (run ${ref.id})`}: ${e.message}`) : e;
  };
  const tokens = await ref.run.tokens(ref.step, ref.sampleIndex, { start: 0, evaluation: ref.evaluation }).catch(named);
  const summary = await ref.run.summary(ref.step, ref.evaluation);
  const texts = await ref.run.sampleTexts(ref.step, ref.evaluation);
  const row = summary.rows.find((r) => r.sample_index === ref.sampleIndex) ?? null;
  const text = texts.find((t) => t.sample_index === ref.sampleIndex)?.fields.response ?? null;
  const off = tokens.response_offset;
  return {
    side: {
      run: ref.run.name,
      step: ref.step,
      evaluation: ref.evaluation,
      sample_index: ref.sampleIndex,
      group_index: row ? num(row.group_index) : null,
      reward: row ? rewardOf(row) : null,
      status: row ? String(row.status) : null,
      response_length: tokens.total_len - tokens.prompt_len,
      text,
      token_text: tokens.token_text ? tokens.token_text.slice(off) : null,
    },
    ids: tokens.token_ids.slice(off),
    tokens,
  };
}

/**
 * Two samples side by side: texts, the first divergence (character and token), the edit alignment of their
 * response tokens and the per-token series laid over it.
 */
export async function sampleDiff(a: SampleRef, b: SampleRef): Promise<SampleDiff> {
  // One after the other: both may read the same step's files.
  const x = await sampleSide(a, 'A');
  const y = await sampleSide(b, 'B');
  const alignment = alignTokens(x.ids, y.ids);
  const series = SERIES.flatMap((name) => {
    const sa = x.tokens[name];
    const sb = y.tokens[name];
    return sa || sb ? [{ name, ...alignSeries(alignment, sa ?? [], sb ?? []) }] : [];
  });
  return {
    a: x.side,
    b: y.side,
    first_divergence: {
      token: firstDivergence(x.ids, y.ids),
      char: x.side.text !== null && y.side.text !== null ? firstDivergence(x.side.text, y.side.text) : null,
    },
    alignment,
    series,
  };
}
