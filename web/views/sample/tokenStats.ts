// The per-token statistics the sample view can colour by, in menu order (each a field of the token answer).
import type { TokenStat } from '../../../src/wire/index.ts';

export const TOKEN_STATS = [
  'lp_diff',
  'imp_ratio',
  'entropy',
  'advantages',
  'rollout_log_probs',
  'train_log_probs',
  'ref_log_probs',
  'ref_entropy',
  'returns',
] as const satisfies readonly TokenStat[];
