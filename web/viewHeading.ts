// Each view's name, for the page title, its one h1 and what a screen reader hears when the view changes.
import type { Route, View } from './route.ts';

export const VIEW_NAMES: Record<View, string> = {
  metrics: 'Metrics',
  timeline: 'Compute Utilization',
  rollout: 'Rollouts',
  sample: 'Sample',
  trace: 'Trace',
  health: 'Health',
  diff: 'Step diff',
  'sample-diff': 'Sample diff',
  runs: 'Runs',
};

/** The view's heading: its name, and the step and sample the address names (`Sample 640 · step 199`). */
export function viewHeading(r: Pick<Route, 'view' | 'rolloutId' | 'sampleIndex' | 'params'>): string {
  const step = r.rolloutId === null ? '' : ` · ${r.params.get('eval') === '1' ? 'eval step' : 'step'} ${r.rolloutId}`;
  if (r.view === 'sample') return `${VIEW_NAMES.sample}${r.sampleIndex === null ? '' : ` ${r.sampleIndex}`}${step}`;
  if (r.view === 'rollout' || r.view === 'trace') return `${VIEW_NAMES[r.view]}${step}`;
  return VIEW_NAMES[r.view];
}

/** Moves focus to the current view's heading (after a route change, or a search result opened). */
export function focusViewHeading(): void {
  document.getElementById('view-heading')?.focus();
}

/** A search result was opened: the heading of the route it names is to be focused and said once that has rendered. */
let headingAsked = false;

/**
 * Opens `to` with focus on its view's heading once that route has rendered, and the heading said, even in the view
 * already shown (a search result in another sample): focusing at once would land on the old heading, and the App
 * says only another view.
 */
export function openWithHeading(to: string, navigate: (to: string) => void): void {
  // the address shown already: no route renders, its heading is the one on the page
  if (to === location.hash) return focusViewHeading();
  headingAsked = true;
  navigate(to);
}

/** Whether a heading was asked for the route just rendered (App asks after each route); the ask is used up either way. */
export function takeHeadingAsked(): boolean {
  const asked = headingAsked;
  headingAsked = false;
  return asked;
}
