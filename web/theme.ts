// One palette for every view: phase colours (fixed per name), lifecycle states, series colours.
export const PHASE_COLORS: Record<string, string> = {
  // The reference palette; its three idle neutrals are darkened for the dark theme, and wake_up
  // takes the carpet's blue since the lane view's red was too close to rollout.
  initialize: '#6f675d',
  rollout: '#d55816',
  eval_rollout: '#e8a683',
  actor_train: '#2a78d6',
  train_log_probs: '#c3b8ec',
  log_probs: '#8b7bd8',
  ref_log_probs: '#4a3aa7',
  data_preprocess: '#eda100',
  train_wait: '#4d4740',
  update_weights: '#e87ba4',
  ref_model_update: '#008300',
  save_model: '#1baf7a',
  sleep: '#3b3630',
  wake_up: '#1864ab',
};
export const PHASE_ORDER = Object.keys(PHASE_COLORS);
export const OTHER_PHASE = '#9c9488';
/** Phases where the GPU is expected to be idle; drawn hatched so idleness does not rely on hue alone. */
export const IDLE_PHASES = new Set(['initialize', 'train_wait', 'sleep']);

export function phaseColor(name: string): string {
  return PHASE_COLORS[name] ?? OTHER_PHASE;
}

/** Request states: hues no phase uses, so a request strip never reads as a phase band. */
export const LIFECYCLE_COLORS: Record<string, string> = {
  queue: '#7d8590',
  generating: '#22b8cf',
  tool_wait: '#c0eb75',
};

/** The brand accent (`--accent`): selection and highlight. */
export const ACCENT = '#ff8a3d';
export const UTIL_COLOR = '#4ea1ff';
/** Memory: a light dashed line, unlike any phase colour. */
export const MEM_COLOR = '#d9d4cc';
export const OVERLAY_COLOR = '#ffb347';

export const SERIES_COLORS = [
  '#4ea1ff',
  '#ff8a3d',
  '#2fcf8f',
  '#e87ba4',
  '#a08cff',
  '#eda100',
  '#ff5c5c',
  '#5fd35f',
  '#c9a26b',
  '#9aa5b1',
];

/**
 * Colour `i` of `n` series: the palette while it lasts; beyond it (16 engines on one chart) `n` hues evenly
 * spaced around the wheel, so no two series share a colour.
 */
export function seriesColor(i: number, n: number): string {
  if (n <= SERIES_COLORS.length) return SERIES_COLORS[i % SERIES_COLORS.length]!;
  const hue = (210 + (360 * i) / n) % 360;
  return hslHex(hue, i % 2 ? 0.62 : 0.8, i % 2 ? 0.58 : 0.66);
}

function hslHex(h: number, s: number, l: number): string {
  const k = (n: number) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => Math.round(255 * (l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1))));
  return `#${[f(0), f(8), f(4)].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

export const CSS = {
  bg: '#121212',
  panel: '#1b1b1d',
  grid: 'rgba(255,255,255,0.07)',
  axis: '#8f8a83',
  text: '#e8e4de',
  muted: '#9b958d',
};

/** Hex colour with alpha. */
export function alpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`;
}
