// How metric keys are grouped (category by key prefix), which step axis each is logged against, and what each means.
import type { DumpMetricKey, Meta } from '../../../src/wire/index.ts';

export const ENGINE_CATEGORY = 'sglang';
const FIRST = ['rollout', 'perf', 'train', 'eval', 'dump'];
// These are logged against rollout/step but read as training quantities.
const TRAIN_OVERRIDES = new Set(['rollout/log_probs', 'rollout/ref_log_probs', 'rollout/rollout_log_probs', 'rollout/teacher_log_probs']);

export function categoryOf(key: string): string {
  if (TRAIN_OVERRIDES.has(key)) return 'train';
  const i = key.indexOf('/');
  return i < 0 ? key : key.slice(0, i);
}

export interface Catalog {
  categories: { name: string; keys: string[] }[];
}

/**
 * The `dump/*` step aggregates the server derives from the rollout dumps (the wire's DumpMetricKey; a
 * test checks this list against the server's). The reference lists them only on a run without
 * metrics; the app also lists them beside the logged keys whenever the run has dumped steps.
 */
export const DUMP_KEYS: readonly DumpMetricKey[] = [
  'dump/reward_mean',
  'dump/reward_std',
  'dump/response_length_mean',
  'dump/truncated_frac',
  'dump/zero_std_group_frac',
  'dump/mean_abs_lp_diff',
  'dump/mean_entropy',
  'dump/mixed_version_frac',
];

export function buildCatalog(meta: Meta): Catalog {
  const byCat = new Map<string, string[]>();
  const stepKeys = new Set(meta.step_keys);
  const listed = new Set(meta.metric_keys);
  const dumped = meta.rollout_ids.train.length > 0 ? DUMP_KEYS.filter((k) => !listed.has(k)) : [];
  for (const k of [...meta.metric_keys, ...dumped]) {
    // A step counter plotted against itself says nothing.
    if (stepKeys.has(k)) continue;
    const c = categoryOf(k);
    if (!byCat.has(c)) byCat.set(c, []);
    byCat.get(c)!.push(k);
  }
  const categories = [...byCat.keys()].sort(categoryOrder).map((name) => ({ name, keys: byCat.get(name)! }));
  if (meta.engine_metric_keys.length) categories.push({ name: ENGINE_CATEGORY, keys: [...meta.engine_metric_keys] });
  return { categories };
}

/** Known categories first (rollout, perf, train, eval, dump), then the others alphabetically. */
function categoryOrder(a: string, b: string): number {
  const ia = FIRST.indexOf(a);
  const ib = FIRST.indexOf(b);
  if (ia >= 0 || ib >= 0) return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
  return a.localeCompare(b);
}

/**
 * The catalog of several runs compared at once: every key any of them lists, each category's keys in the
 * first catalog's order and then the keys only later ones have (the engine category stays last).
 */
export function mergeCatalogs(catalogs: readonly Catalog[]): Catalog {
  const byCat = new Map<string, string[]>();
  for (const c of catalogs)
    for (const { name, keys } of c.categories) {
      const into = byCat.get(name) ?? [];
      byCat.set(name, into);
      for (const k of keys) if (!into.includes(k)) into.push(k);
    }
  const names = [...byCat.keys()].filter((n) => n !== ENGINE_CATEGORY).sort(categoryOrder);
  if (byCat.has(ENGINE_CATEGORY)) names.push(ENGINE_CATEGORY);
  return { categories: names.map((name) => ({ name, keys: byCat.get(name)! })) };
}

/** Every key a catalog lists. */
export function catalogKeys(c: Catalog): Set<string> {
  return new Set(c.categories.flatMap((x) => x.keys));
}

/** The step key a metric is recorded against: `<prefix>/step` when the run logs one, else rollout/step. */
export function axisOf(key: string, stepKeys: string[]): string {
  const prefixStep = `${categoryOf(key)}/step`;
  if (!key.startsWith('dump/') && stepKeys.includes(prefixStep)) return prefixStep;
  if (stepKeys.includes('rollout/step') || stepKeys.length === 0) return 'rollout/step';
  return stepKeys[0]!;
}

const DESCRIPTIONS: [string, string][] = [
  ['teacher_log_probs', 'log-prob under a distillation teacher model'],
  ['ref_log_probs', 'log-prob under the reference (KL-anchor) policy'],
  ['rollout_log_probs', 'log-prob reported by the rollout engine at generation time'],
  ['log_probs', 'trainer-recomputed log-prob of the response under the current policy'],
  ['entropy_loss', 'entropy bonus term of the policy loss'],
  ['ref_entropy', 'per-token entropy under the reference policy'],
  ['entropy', 'trainer-recomputed per-token entropy of the response distribution'],
  ['response_length', 'generated-response length in tokens'],
  ['reward_std', 'spread of rewards across the step\'s samples'],
  ['reward', 'scalar reward assigned to the sampled response'],
  ['truncated', 'samples that hit the length/turn limit before finishing'],
  ['zero_std', 'GRPO groups whose reward std is ~0 — no gradient signal from that group'],
  ['mean_abs_lp_diff', 'mean |trainer log-prob − rollout log-prob| — rollout/train policy staleness'],
  ['mixed_version', 'samples whose tokens span more than one weight version'],
  ['step_time', 'wall-clock seconds for one step'],
  ['wait_time_ratio', 'fraction of the step spent idle/waiting rather than computing'],
  ['mfu_peak', 'device peak TFLOP/s used as the MFU denominator'],
  ['mfu', 'model FLOPs utilisation: achieved / peak FLOP/s'],
  ['cpu_memory', 'host CPU memory (RSS) sampled around this step, in GB'],
  ['advantages', 'GRPO advantage (reward normalized within its group)'],
  ['returns', 'return used for the policy-gradient / value target'],
  ['grad_norm', 'global gradient norm before clipping'],
  ['pg_clipfrac', 'fraction of tokens where the PPO clip bound was active'],
  ['kl', 'KL divergence between the current and reference policy'],
  ['loss', 'training loss for this step'],
  ['lr', 'learning rate'],
  ['num_running_reqs', 'requests concurrently running on the sglang engine'],
  ['num_queue_reqs', 'requests waiting in the sglang queue'],
  ['gen_throughput', 'generated tokens per second'],
  ['generation_tokens_per_s', 'generated tokens per second (from the counter)'],
  ['token_usage', 'fraction of KV cache capacity currently in use'],
  ['cache_hit_rate', 'prefix-cache hit rate'],
  ['ttft', 'mean time to first token, seconds'],
];

export function describe(key: string): string {
  const tail = key.includes('/') ? key.slice(key.indexOf('/') + 1) : key;
  return DESCRIPTIONS.find(([p]) => tail.includes(p))?.[1] ?? '';
}

/**
 * The unit a metric key implies, for its y axis: `*_time` seconds, `*_mfu` percent (a fraction scaled
 * ×100 on the axis), `*_mb` MiB, throughputs tokens/s, other `*_per_s` rates per second; null when the key implies none.
 */
export function unitOf(key: string): { unit: string; scale: number } | null {
  const k = key.toLowerCase().replace(/^.*\//, '');
  if (/(^|_)mfu$/.test(k)) return { unit: '%', scale: 100 };
  if (/throughput|tok(en)?s?_per_s(ec|econd)?$/.test(k)) return { unit: 'tokens/s', scale: 1 };
  if (/_per_s(ec|econd)?$/.test(k)) return { unit: 'per s', scale: 1 };
  if (/_time$|_seconds?$|^time_/.test(k) || /(ttft|latency|_s$)/.test(k)) return { unit: 's', scale: 1 };
  if (/_mb$/.test(k)) return { unit: 'MiB', scale: 1 };
  return null;
}
