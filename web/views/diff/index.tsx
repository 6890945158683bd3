// Step diff (`#/diff?a=STEP&b=STEP`, `run_a`/`run_b` on a server holding several runs): what changed between
// two steps — distributions overlaid with deltas, groups whose outcome flipped, metrics side by side, the
// samples that moved most. Sample diff (`#/diff/sample?a=STEP:SAMPLE&b=STEP:SAMPLE`, or `?step=S&group=G`
// for a group's best and worst): two responses aligned by their tokens.
import type { Meta } from '../../../src/wire/index.ts';
import type { Route } from '../../route.ts';
import { SampleDiffView } from './sampleDiff.tsx';
import { StepDiffView } from './stepDiff.tsx';

export function DiffView({ meta, route }: { meta: Meta; route: Route }) {
  return route.view === 'sample-diff' ? <SampleDiffView meta={meta} route={route} /> : <StepDiffView meta={meta} route={route} />;
}
