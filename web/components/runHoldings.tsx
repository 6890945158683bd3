// An empty state's account of the run: what it holds and lacks (runFacts.ts), with links to the views that
// have something to show for it.
import type { Meta } from '../../src/wire/index.ts';
import { href } from '../route.ts';
import { runList, shownRunId } from '../runs.ts';
import { dumped, holdingsText, runFacts, type RunFacts } from '../runFacts.ts';
import { useStore } from '../store.ts';

type View = 'metrics' | 'timeline' | 'trace' | 'rollout' | 'health';

/** The facts of the run shown: its meta, and its format from the run list (null before the list is loaded). */
export function useRunFacts(meta: Meta): RunFacts {
  const runs = useStore(runList);
  const id = shownRunId(runs);
  return runFacts(meta, runs?.find((r) => r.id === id)?.formats[0] ?? null);
}

/** "It holds …" and a link to each other view with something to show for the run. */
export function RunHoldings({ facts, here }: { facts: RunFacts; here: View }) {
  const links: [View, string, string][] = [];
  if (facts.metricKeys > 0 || dumped(facts)) links.push(['metrics', '/', 'Metrics']);
  if (facts.timeline) links.push(['timeline', '/timeline', 'Compute Utilization']);
  if (facts.traces && dumped(facts)) links.push(['trace', '/trace', 'Trace']);
  if (dumped(facts)) links.push(['rollout', '/rollout', 'Rollouts'], ['health', '/health', 'Health']);
  const shown = links.filter(([v]) => v !== here);
  return (
    <span data-testid="run-holdings">
      {holdingsText(facts)}
      {shown.length > 0 && (
        <>
          {' '}
          Open{' '}
          {shown.map(([v, path, label], i) => (
            <>
              {i > 0 && (i === shown.length - 1 ? ' or ' : ', ')}
              <a href={href(path)} data-view={v}>
                {label}
              </a>
            </>
          ))}
          .
        </>
      )}
    </span>
  );
}
