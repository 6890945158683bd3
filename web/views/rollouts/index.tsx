// Rollouts: one step's samples — dump/* summary, scatter, virtualised sortable table, GRPO groups — every choice in the URL.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { getJson } from '../../api.ts';
import { Downloads } from '../../components/downloads.tsx';
import { Empty, ErrorNote, Loading } from '../../components/status.tsx';
import { VirtualTable } from '../../components/virtualTable.tsx';
import { useKeys } from '../../keyboard.ts';
import { liveTick, meta as liveMeta } from '../../live.ts';
import { href, navigate, setParams, type Route } from '../../route.ts';
import { useStore } from '../../store.ts';
import type { Cell, Meta, TableRow as Row, RolloutPreview, RolloutTable as Table, Trajectories } from '../../../src/wire/index.ts';
import { fmtNum } from '../../format.ts';
import { realGroups, versionSpan } from './stepFigures.ts';
import { useApi } from '../../useApi.ts';
import { BatchAnatomy } from './anatomy.tsx';
import { RunsCompare } from './compare.tsx';
import { DumpSummary } from './dumpSummary.tsx';
import { type ColorBy, colorOf, groupPalette, Scatter } from './scatter.tsx';
import { StepBar, stepHref } from './stepBar.tsx';
import { RunHoldings, useRunFacts } from '../../components/runHoldings.tsx';
import { noDumpsText } from '../../runFacts.ts';

const DEFAULT_COLUMNS = [
  'sample_index',
  'group_index',
  'status',
  'raw_reward',
  'reward',
  'response_length',
  'weight_version',
  'mixed_version',
  'staleness',
  'turns',
  'tool_calls',
  'mean_abs_lp_diff',
  'mean_imp_ratio',
  'mean_entropy',
  'adv_mean',
  'non_generation_time',
];

export function RolloutsView({ meta, route }: { meta: Meta; route: Route }) {
  const facts = useRunFacts(meta);
  const evaluation = route.params.get('eval') === '1';
  const ids = evaluation ? meta.rollout_ids.eval : meta.rollout_ids.train;
  const latest = ids.at(-1) ?? meta.rollout_ids.train.at(-1);
  const redirect = !route.invalid && route.rolloutId === null && latest !== undefined ? stepHref(latest, evaluation && ids.length > 0, route.params) : null;
  // `#/rollout` alone means "the latest step": say so in the URL, replacing this entry, its other choices (`runs=`) kept.
  useEffect(() => {
    if (redirect) navigate(redirect, true);
  }, [redirect]);
  if (route.invalid) return <ErrorNote error={new Error(route.invalid)} />;
  if (route.rolloutId === null) {
    if (latest === undefined)
      return (
        <Empty>
          {noDumpsText(facts, 'Rollouts')}
          <br />
          <RunHoldings facts={facts} here="rollout" />
        </Empty>
      );
    return <Loading what="step" />;
  }
  return <Rollouts meta={meta} route={route} id={route.rolloutId} evaluation={evaluation} />;
}

function Rollouts({ meta, route, id, evaluation }: { meta: Meta; route: Route; id: number; evaluation: boolean }) {
  const tick = useStore(liveTick);
  const p = route.params;
  const tab = p.get('tab') === 'groups' ? 'groups' : 'samples';
  const ids = evaluation ? meta.rollout_ids.eval : meta.rollout_ids.train;
  const known = ids.includes(id);
  const pos = ids.indexOf(id);
  useKeys({
    next: () => pos >= 0 && pos < ids.length - 1 && navigate(stepHref(ids[pos + 1]!, evaluation, p)),
    prev: () => pos > 0 && navigate(stepHref(ids[pos - 1]!, evaluation, p)),
  });

  const key = `${id}|${evaluation}`;
  // The step's first samples as soon as they are decoded, then all of them (its preview: a step already read
  // answers its summary itself); only while the train side is still joined is the summary asked too, to fill
  // the train columns in.
  const first = useApi(known ? key : null, (signal) => getJson<RolloutPreview>(`rlsight/rollout/${id}/preview`, { eval: evaluation, first: true }, signal), known ? 0 : tick);
  const firstOnly = first.data?.first_samples === true;
  const rest = useApi(known && firstOnly ? key : null, (signal) => getJson<RolloutPreview>(`rlsight/rollout/${id}/preview`, { eval: evaluation }, signal));
  const preview = rest.data ?? first.data;
  const pending = preview?.train_pending === true;
  const summary = useApi(known && pending && !preview?.first_samples ? key : null, (signal) => getJson<Table>(`rollout/${id}/summary`, { eval: evaluation }, signal));
  const groups = useApi(known ? key : null, (signal) => getJson<Table>(`rollout/${id}/groups`, { eval: evaluation }, signal));
  const real = groups.data ? realGroups(groups.data.rows) : null;
  const table: RolloutPreview | null = summary.data ?? preview;
  const firstSamples = table?.first_samples === true;
  const trainPending = pending && !summary.data;
  const tableError = first.error ?? rest.error ?? summary.error;

  const tabHref = (t: string) => {
    const q = new URLSearchParams(p);
    if (t === 'samples') q.delete('tab');
    else q.set('tab', t);
    return href(`/rollout/${id}`, q);
  };

  return (
    <div class="rollouts">
      <StepBar meta={meta} id={id} evaluation={evaluation} params={p} />
      {!known ? (
        <Empty>
          {evaluation ? 'Eval step' : 'Step'} {id} is not recorded in this run.{' '}
          {ids.length ? (
            <>
              Recorded {evaluation ? 'eval ' : ''}steps: {ids.length > 20 ? `${ids[0]}–${ids.at(-1)}` : ids.join(', ')}.{' '}
              <a href={stepHref(ids.at(-1)!, evaluation)}>Open the latest</a>.
            </>
          ) : (
            'There are none yet.'
          )}
        </Empty>
      ) : (
        <>
          <DumpSummary id={id} evaluation={evaluation} tick={tick} rows={table && !firstSamples ? table.rows : null} groups={groups.data?.rows ?? null} />
          {!evaluation && <RunsCompare id={id} params={p} />}
          <Downloads what={`step ${id} table`} path={`rlsight/export/rollout/${id}`} formats={['csv', 'parquet']} params={{ eval: evaluation || undefined }} />
          <nav class="tabs" aria-label="rollout tabs">
            <a href={tabHref('samples')} class={tab === 'samples' ? 'active' : ''}>
              Samples{table ? ` (${firstSamples ? 'first ' : ''}${table.rows.length})` : ''}
            </a>
            <a href={tabHref('groups')} class={tab === 'groups' ? 'active' : ''}>
              Groups{real ? ` (${real.length}, ${real.filter((r) => r.zero_std === true).length} zero-std)` : ''}
            </a>
          </nav>
          {tab === 'samples' ? (
            tableError ? (
              <ErrorNote error={tableError} />
            ) : !table ? (
              <Loading what={`step ${id} samples (the first open of a step reads its whole dump)`} />
            ) : (
              <>
                {firstSamples ? (
                  <Loading what={`the rest of step ${id}'s samples (its first ${table.rows.length}, whole groups, are shown while its dump is read)`} />
                ) : (
                  trainPending && <Loading what={`step ${id}'s train columns (entropy, log-prob drift, advantages: its rank files are being joined)`} />
                )}
                <SamplesTab table={table} groups={groups.data?.rows ?? []} id={id} evaluation={evaluation} params={p} trainPending={trainPending} />
              </>
            )
          ) : groups.error ? (
            <ErrorNote error={groups.error} />
          ) : !groups.data ? (
            <Loading what="groups" />
          ) : (
            <GroupsTab table={groups.data} id={id} evaluation={evaluation} params={p} />
          )}
        </>
      )}
    </div>
  );
}

/** Legend entries shown before "+N more": a 4,096-sample step colours 512 groups, a wall of swatches above its table. */
const LEGEND_SHOWN = 24;

function sortOf(p: URLSearchParams, fallback: string) {
  return { col: p.get('sort') ?? fallback, desc: p.get('desc') === '1' };
}

function toggleSort(p: URLSearchParams, col: string, fallback: string) {
  const cur = sortOf(p, fallback);
  // First click on a new column sorts descending (largest first), the usual question.
  if (cur.col !== col) setParams({ sort: col, desc: true });
  else setParams({ sort: col, desc: !cur.desc });
}

export function sampleHref(id: number, idx: number, evaluation: boolean): string {
  return href(`/rollout/${id}/sample/${idx}`, { eval: evaluation });
}

function SamplesTab(props: { table: Table; groups: Row[]; id: number; evaluation: boolean; params: URLSearchParams; trainPending?: boolean }) {
  const { table, groups, id, evaluation, params, trainPending = false } = props;
  const numeric = useMemo(
    () => table.columns.filter((c) => table.rows.some((r) => typeof r[c] === 'number' || typeof r[c] === 'boolean') && c !== 'sample_index'),
    [table],
  );
  // The trainer's raw reward once the train side is read (a preview's is still empty), else the rollout's.
  const rewardCol = !evaluation && table.rows.some((r) => r.raw_reward !== null && r.raw_reward !== undefined) ? 'raw_reward' : 'reward';
  const sx = params.get('sx') ?? 'response_length';
  const sy = params.get('sy') ?? rewardCol;
  const colorBy = (params.get('color') as ColorBy) || 'group';
  const allCols = params.get('cols') === 'all';
  const group = params.get('group');
  const rows = useMemo(() => (group !== null ? table.rows.filter((r) => String(r.group_index) === group) : table.rows), [table, group]);
  const groupSamples = useMemo(() => (group !== null ? new Set(rows.map((r) => Number(r.sample_index))) : null), [rows, group]);
  const columns = useMemo(() => {
    if (allCols) return table.columns;
    // Default: the columns worth scanning, minus ones this step never fills (e.g. train-side stats on eval).
    const keep = DEFAULT_COLUMNS.filter((c) => table.columns.includes(c) && table.rows.some((r) => r[c] !== null && r[c] !== undefined));
    // One reward column is enough: the trainer's raw_reward when present, else the rollout's.
    return keep.includes('raw_reward') ? keep.filter((c) => c !== 'reward') : keep;
  }, [table, allCols]);
  const palette = useMemo(() => groupPalette(rows), [rows]);
  const legend = useMemo(() => {
    const m = new Map<string, string>();
    for (const r of rows) {
      const c = colorOf(r, colorBy, palette);
      if (!m.has(c.key)) m.set(c.key, c.color);
    }
    return [...m];
  }, [rows, colorBy, palette]);
  const [wholeLegend, setWholeLegend] = useState(false);
  const shownLegend = wholeLegend ? legend : legend.slice(0, LEGEND_SHOWN);
  const zeroStd = useMemo(() => new Set<number>(groups.filter((g) => g.zero_std === true).map((g) => Number(g.group_index))), [groups]);
  // the zero-std groups among the samples shown (a group filter shows one group)
  const zeroShown = useMemo(() => new Set(rows.map((r) => Number(r.group_index)).filter((g) => zeroStd.has(g))).size, [rows, zeroStd]);
  const open = (r: Row) => navigate(sampleHref(id, Number(r.sample_index), evaluation));
  // The batch anatomy: when each sample of a train step generated, against the consume line.
  // (asked once the step is read: while its train side is joined it would take the same cores)
  // the newest step of a followed run is asked again as its samples' lifecycles arrive
  const tick = useStore(liveTick);
  const catalog = useStore(liveMeta);
  const growing = !evaluation && catalog?.mode === 'follow' && catalog.rollout_ids.train.at(-1) === id;
  const traj = useApi(
    evaluation || trainPending ? null : `${id}|anatomy`,
    (signal) => getJson<Trajectories>(`rollout/${id}/trajectories`, {}, signal).catch(() => null),
    growing ? tick : 0,
  );
  const axisSelect = (k: 'sx' | 'sy', v: string) => (
    <select value={v} aria-label={k === 'sx' ? 'scatter x axis' : 'scatter y axis'} onChange={(e) => setParams({ [k]: (e.target as HTMLSelectElement).value }, false)}>
      {numeric.map((c) => (
        <option key={c}>{c}</option>
      ))}
    </select>
  );

  return (
    <div class="rollout-grid">
      {group !== null && (
        <p class="group-filter" data-testid="group-filter">
          showing group {group}: {rows.length} sample{rows.length === 1 ? '' : 's'} in the anatomy, the scatter and the table ·{' '}
          <button onClick={() => setParams({ group: null }, false)}>show all groups</button>
        </p>
      )}
      {traj.data && traj.data.lanes.length > 0 && (
        <BatchAnatomy traj={traj.data} rows={rows} only={groupSamples} onOpen={(n) => navigate(sampleHref(id, n, evaluation))} />
      )}
      <section class="panel">
        <header>
          <h3>
            Samples: {sy} against {sx}
          </h3>
          <div class="scatter-controls">
            <label>x {axisSelect('sx', sx)}</label>
            <label>y {axisSelect('sy', sy)}</label>
            <label>
              colour
              <select value={colorBy} aria-label="scatter colour" onChange={(e) => setParams({ color: (e.target as HTMLSelectElement).value }, false)}>
                <option value="group">group</option>
                <option value="status">status</option>
                <option value="mixed_version">mixed version</option>
                <option value="truncated">truncated</option>
              </select>
            </label>
          </div>
        </header>
        <Scatter rows={rows} x={sx} y={sy} colorBy={colorBy} palette={palette} zeroStd={zeroStd} onOpen={open} />
        <div class="scatter-legend" data-testid="scatter-legend">
          {zeroShown > 0 && (
            <span>
              <i class="swatch ring" /> zero-std group ({zeroShown})
            </span>
          )}
          {shownLegend.map(([k, c]) => (
            <span key={k}>
              <i class="swatch" style={{ background: c }} /> {k}
            </span>
          ))}
          {legend.length > LEGEND_SHOWN && (
            <button class="icon" aria-expanded={wholeLegend} onClick={() => setWholeLegend(!wholeLegend)}>
              {wholeLegend ? 'fewer' : `+${legend.length - LEGEND_SHOWN} more`}
            </button>
          )}
        </div>
      </section>
      <section class="panel">
        <header>
          <h3>
            {rows.length} sample{rows.length === 1 ? '' : 's'}
            {group !== null && (
              <span class="chip" style={{ marginLeft: '8px' }}>
                group {group}
                <button aria-label="show all groups" onClick={() => setParams({ group: null }, false)}>
                  ×
                </button>
              </span>
            )}{' '}
            <span class="muted" style={{ fontWeight: 400 }}>
              · click a row to open the sample · click a header to sort
            </span>
          </h3>
          <label class="muted" style={{ fontSize: '12.5px' }}>
            <input type="checkbox" checked={allCols} onChange={(e) => setParams({ cols: (e.target as HTMLInputElement).checked ? 'all' : null }, false)} /> all{' '}
            {table.columns.length} columns
          </label>
        </header>
        <VirtualTable
          rows={rows}
          columns={columns}
          sort={sortOf(params, 'sample_index')}
          onSort={(c) => toggleSort(params, c, 'sample_index')}
          rowHref={(r) => sampleHref(id, Number(r.sample_index), evaluation)}
          rowClass={(r) => (r.remove_sample === true ? 'removed' : r.status === 'aborted' || r.status === 'failed' ? 'flag' : '')}
          cell={sampleCell}
          testId="samples-table"
        />
      </section>
    </div>
  );
}

/** A samples-table cell: a sample generated across several weight versions shows them all as a range (`196–197`). */
function sampleCell(c: string, v: Cell, r: Row): string {
  if (c === 'weight_version' && v !== null) return versionSpan(r)?.text ?? fmtNum(v);
  return fmtNum(v);
}

/** The samples tab narrowed to a groups-table row's group. */
function groupHref(id: number, evaluation: boolean, r: Row): string {
  return href(`/rollout/${id}`, { eval: evaluation, group: String(r.group_index) });
}

function GroupsTab({ table, id, evaluation, params }: { table: Table; id: number; evaluation: boolean; params: URLSearchParams }) {
  const real = realGroups(table.rows);
  const zero = real.filter((r) => r.zero_std === true).length;
  const lone = table.rows.length - real.length;
  return (
    <section class="panel">
      <header>
        <h3>
          {real.length} GRPO groups ·{' '}
          <span style={{ color: zero > 0 ? 'var(--bad)' : undefined }} data-testid="zero-std-count">
            {zero} with zero reward std
          </span>{' '}
          <span class="muted" style={{ fontWeight: 400 }}>
            (every sample of the group scored the same → no gradient signal)
            {lone > 0 && ` · ${lone} single-sample prompt${lone === 1 ? '' : 's'} (no std)`}
            {real.length > 0 && ' · click a group to see its samples'}
          </span>
        </h3>
      </header>
      <VirtualTable
        rows={table.rows}
        columns={table.columns}
        sort={sortOf(params, 'group_index')}
        onSort={(c) => toggleSort(params, c, 'group_index')}
        rowHref={(r) => groupHref(id, evaluation, r)}
        rowClass={(r) => (r.zero_std === true ? 'flag' : '')}
        cell={(c, v) => (c === 'zero_std' ? (v === true ? '● zero std' : v === null ? 'n/a (1 sample)' : '') : v === null ? '—' : typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(3) : String(v))}
        testId="groups-table"
      />
    </section>
  );
}
