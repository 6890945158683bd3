// Trace: one rollout dump's per-request traces (slime), drawn by the shared trace explorer; a sample's
// row links to its conversation and tokens. Runs without traces say so.
import { useEffect, useRef } from 'preact/hooks';
import { apiUrl, getJson } from '../../api.ts';
import { Empty, ErrorNote, Loading } from '../../components/status.tsx';
import { href, navigate, setParams, type Route } from '../../route.ts';
import type { Meta, TraceAnswer, TraceDetails } from '../../../src/wire/index.ts';
import { useApi } from '../../useApi.ts';
import { fmtIntRanges } from '../../format.ts';
import { EXPLORER_CSS, mountTraceExplorer } from './explorer.ts';
import { RunHoldings, useRunFacts } from '../../components/runHoldings.tsx';
import { noDumpsText, noTracesText } from '../../runFacts.ts';

let styled = false;

/** The explorer's zoom and selection from the URL (`tz=T0,T1` seconds since the trace's start, `span=ROW[:ITEM]`). */
function traceState(p: URLSearchParams): { view: [number, number] | null; select: { row: number; item: number | null } | null } {
  const tz = (p.get('tz') ?? '').split(',').map(Number);
  const view: [number, number] | null = tz.length === 2 && tz.every(Number.isFinite) && tz[1]! > tz[0]! ? [tz[0]!, tz[1]!] : null;
  const m = /^(\d+)(?::(\d+))?$/.exec(p.get('span') ?? '');
  return { view, select: m ? { row: Number(m[1]), item: m[2] === undefined ? null : Number(m[2]) } : null };
}

export function TraceView({ meta, route }: { meta: Meta; route: Route }) {
  const facts = useRunFacts(meta);
  const evaluation = route.params.get('eval') === '1';
  const ids = evaluation ? meta.rollout_ids.eval : meta.rollout_ids.train;
  const id = route.rolloutId ?? ids.at(-1) ?? null;
  // a run without traces has no step to look for: nothing is asked, and the view says so once
  const known = facts.traces && id !== null && ids.includes(id) && !route.invalid;
  const answer = useApi<TraceAnswer>(!known ? null : `${id}|${evaluation}`, (signal) => getJson<TraceAnswer>('rlsight/trace', { rollout_id: id, eval: evaluation }, signal));
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!styled) {
      const s = document.createElement('style');
      s.textContent = EXPLORER_CSS;
      document.head.append(s);
      styled = true;
    }
  }, []);
  useEffect(() => {
    if (!answer.data || !host.current || id === null) return;
    const cache = new Map<number, Promise<TraceDetails>>();
    const mounted = mountTraceExplorer(host.current, answer.data, {
      loadDetails: (row) => {
        let p = cache.get(row);
        if (!p) cache.set(row, (p = getJson<TraceDetails>('rlsight/trace/details', { rollout_id: id, eval: evaluation, row })));
        return p;
      },
      openSample: (row) => {
        if (row.sample_index !== null) navigate(href(`/rollout/${id}/sample/${row.sample_index}`, { eval: evaluation }));
      },
      // The zoom (`tz=`) and the selected span (`span=ROW:ITEM`) live in the URL, so a trace screen is a permalink.
      initial: traceState(route.params),
      onState: ({ view, select }) =>
        setParams({ tz: view ? view.map((v) => +v.toFixed(6)).join(',') : null, span: select ? `${select.row}${select.item === null ? '' : `:${select.item}`}` : null }),
    });
    return () => mounted.destroy();
  }, [answer.data, id, evaluation]);

  if (!facts.traces)
    return (
      <Empty>
        <span data-testid="no-traces">{noTracesText(facts)}</span>
        <br />
        <RunHoldings facts={facts} here="trace" />
      </Empty>
    );
  if (id === null)
    return (
      <Empty>
        {evaluation && meta.rollout_ids.train.length > 0 ? (
          <>
            This run holds no eval steps{facts.mayGrow ? ' yet' : ''}. <a href={href('/trace')}>Open its train steps</a>.
          </>
        ) : (
          noDumpsText(facts, 'Trace')
        )}
      </Empty>
    );
  if (!known)
    return (
      <div class="error-note" role="alert" data-testid="url-note">
        {route.invalid ?? `${evaluation ? 'Eval step' : 'Step'} ${id} is not recorded in this run`}. Recorded {evaluation ? 'eval ' : ''}steps:{' '}
        {ids.length ? fmtIntRanges(ids) : `none${facts.mayGrow ? ' yet' : ''}`}.{' '}
        {ids.length > 0 && <a href={href(`/trace/${ids.at(-1)}`, { eval: evaluation })}>Open the latest ({ids.at(-1)})</a>}
      </div>
    );
  return (
    <div class="trace-view" style={{ display: 'flex', flexDirection: 'column', height: 'calc(100vh - 70px)' }}>
      <div class="toolbar">
        <strong>{evaluation ? 'Eval step' : 'Step'}</strong>
        {ids.map((r) => (
          <a key={r} href={href(`/trace/${r}`, { eval: evaluation })} class={r === id ? 'active' : ''} style={{ marginLeft: '6px' }}>
            {r}
          </a>
        ))}
        {meta.rollout_ids.eval.length > 0 && (
          <a href={href(`/trace${evaluation ? '' : `/${meta.rollout_ids.eval.at(-1)}`}`, { eval: !evaluation })} style={{ marginLeft: '12px' }}>
            {evaluation ? 'train steps' : 'eval steps'}
          </a>
        )}
        <a href={apiUrl('rlsight/export/perfetto', { rollout_id: id, eval: evaluation ? 1 : undefined })} download style={{ marginLeft: 'auto' }} data-testid="perfetto-download">
          download Perfetto trace
        </a>
      </div>
      {answer.error ? <ErrorNote error={answer.error} /> : !answer.data ? <Loading what="traces" /> : null}
      <div ref={host} style={{ flex: 1, minHeight: 0, display: answer.data ? 'flex' : 'none' }} data-testid="trace-view" />
    </div>
  );
}
