// Step diff (`#/diff?a=STEP&b=STEP`, `run_a`/`run_b` on a server holding several runs): what changed between
// two steps — distributions overlaid with deltas, groups whose outcome flipped, metrics side by side, the
// samples that moved most. Sample diff (`#/diff/sample?a=STEP:SAMPLE&b=STEP:SAMPLE`, or `?step=S&group=G`
// for a group's best and worst): two responses aligned by their tokens.
//
// The header names one run; on a diff it is side A's. A `run_a` the server holds that is not the header's run
// (`run=`, else the primary) is written into `run=` before anything is drawn (replacing the history entry), so
// the header, its badges and every link of the page name side A's run, never a third one.
import { useLayoutEffect } from 'preact/hooks';
import type { Meta } from '../../../src/wire/index.ts';
import { Loading } from '../../components/status.tsx';
import { href, navigate, routePath, type Route } from '../../route.ts';
import { shownRunId } from '../../runs.ts';
import { SampleDiffView } from './sampleDiff.tsx';
import { useServedRuns } from './servedRuns.ts';
import { StepDiffView } from './stepDiff.tsx';

export function DiffView({ meta, route }: { meta: Meta; route: Route }) {
  const served = useServedRuns();
  const runA = route.params.get('run_a');
  const header = shownRunId(served);
  const mismatch = served !== null && runA !== null && runA !== header && served.some((r) => r.id === runA);
  useLayoutEffect(() => {
    if (!mismatch) return;
    const p = new URLSearchParams(route.params);
    p.set('run', runA!);
    navigate(href(routePath(route), p), true);
  }, [mismatch, runA]);
  if (mismatch) return <Loading what={`run ${runA}`} />;
  return route.view === 'sample-diff' ? <SampleDiffView meta={meta} route={route} /> : <StepDiffView meta={meta} route={route} />;
}
