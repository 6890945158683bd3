// Runs table (`#/runs`): one row per served run — what it is (format, status, start, duration, GPUs, steps), how
// it was configured (meta.json's args) and where it stands (the latest value of chosen metrics). Sort, filter,
// and pick runs to compare; the choices live in the URL (`sort`, `desc`, `q`, `metrics`, `args`, `pick`).
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { getJson } from '../../api.ts';
import { ErrorNote, Loading } from '../../components/status.tsx';
import { SideScroll } from '../../components/sideScroll.tsx';
import { fmtDuration, fmtNum, fmtWall, naturalCompare } from '../../format.ts';
import { liveTick, meta } from '../../live.ts';
import { href, setParams, type Route } from '../../route.ts';
import { runColor, runLabel, runList } from '../../runs.ts';
import { useStore } from '../../store.ts';
import type { RunConfigValue, RunListing, RunsAnswer } from '../../../src/wire/index.ts';
import { CoverageNote, leastStepCoverage, useStepwiseApi } from '../../components/coverage.tsx';
import { comparedPair, pairNote, type PairView, type RunMetas, useRunMetas } from '../../runMetas.ts';
import { DUMP_KEYS } from '../metrics/catalog.ts';
import { filterWords, runMatches, type FilterColumn } from './runFilter.ts';

/** The latest values shown unless the URL chooses others: reward, zero-std share, step time. */
export const DEFAULT_METRICS = ['rollout/rewards_mean', 'rollout/zero_std_group_ratio', 'perf/step_time'];
/** New runs under `--runs ROOT --follow` are listed within this. */
const POLL_MS = 5000;
/** What each run holds (for the metric columns offered and the runs each comparison can show) is asked again every this many polls. */
const METAS_EVERY_POLLS = 6;

/** Key configuration columns: the first arg a run records under any of the names. */
const KEY_CONFIG: { id: string; label: string; args: string[] }[] = [
  { id: 'model', label: 'model', args: ['hf_checkpoint', 'model_name', 'model', 'load'] },
  { id: 'lr', label: 'lr', args: ['lr', 'learning_rate'] },
  { id: 'batch', label: 'batch', args: ['global_batch_size', 'rollout_batch_size'] },
  { id: 'group', label: 'group size', args: ['n_samples_per_prompt'] },
];
const PARALLELISM: [string, string][] = [
  ['TP', 'tensor_model_parallel_size'],
  ['PP', 'pipeline_model_parallel_size'],
  ['CP', 'context_parallel_size'],
  ['EP', 'expert_model_parallel_size'],
];

type Cell = string | number | null;

interface Column {
  id: string;
  label: string;
  title?: string;
  value: (r: RunListing) => Cell;
  show?: (r: RunListing) => ComponentChildren;
}

function keyConfig(r: RunListing, names: string[]): RunConfigValue | null {
  for (const n of names) if (r.config[n] !== undefined) return r.config[n]!;
  return null;
}

function parallelism(r: RunListing): string | null {
  const parts = PARALLELISM.filter(([, k]) => typeof r.config[k] === 'number').map(([l, k]) => `${l}${r.config[k]}`);
  return parts.length ? parts.join(' ') : null;
}

const duration = (r: RunListing) => (r.start_ts !== null && r.end_ts !== null ? Math.max(0, r.end_ts - r.start_ts) : null);
const list = (v: string | null) => (v ?? '').split(',').filter(Boolean);
const scalar = (v: RunConfigValue | null): Cell => (v === null ? null : typeof v === 'boolean' ? String(v) : v);
const cellText = (v: Cell) => (v === null ? '—' : typeof v === 'number' ? fmtNum(v) : v);

export function RunsView({ route }: { route: Route }) {
  const p = route.params;
  const metricKeys = p.has('metrics') ? list(p.get('metrics')) : DEFAULT_METRICS;
  const argCols = list(p.get('args'));
  const picked = new Set(list(p.get('pick')));
  const sort = p.get('sort') ?? 'start';
  const desc = p.get('desc') === '1';
  const m = useStore(meta);
  const tick = useStore(liveTick);
  const [poll, setPoll] = useState(0);
  // A followed server may gain runs (`--runs ROOT --follow`): ask again while the table is open.
  useEffect(() => {
    if (m?.mode !== 'follow') return;
    const t = setInterval(() => setPoll((n) => n + 1), POLL_MS);
    return () => clearInterval(t);
  }, [m?.mode]);
  // a slime or collected run whose steps the server still reads has its span and latest values over those read so far: asked again until complete
  const res = useStepwiseApi(
    `runs|${metricKeys.join(',')}`,
    (signal) => getJson<RunsAnswer>('runs', { latest: metricKeys.join(',') }, signal),
    `${tick}|${poll}`,
    (d) => leastStepCoverage(d.runs.map((r) => r.coverage)),
  );
  const [filter, setFilter] = useState(p.get('q') ?? '');
  // The header's run choice learns of runs that joined.
  useEffect(() => {
    if (res.data && res.data.runs.length !== (runList.get()?.length ?? 0)) runList.set(res.data.runs);
  }, [res.data]);

  const runs = res.data?.runs ?? [];
  const allArgs = useMemo(() => [...new Set(runs.flatMap((r) => Object.keys(r.config)))].sort(), [runs]);
  const metas = useRunMetas(
    runs.map((r) => r.id),
    Math.floor(poll / METAS_EVERY_POLLS),
  );
  const metricOptions = useMemo(() => metricKeyOptions(runs.map((r) => r.id), metas), [metas]);
  const columns: Column[] = [
    { id: 'format', label: 'format', value: (r) => r.formats.join(', ') },
    {
      id: 'status',
      label: 'status',
      value: (r) => r.status,
      show: (r) => (
        <span class={`run-status ${r.status}`} title={r.warnings.join('\n') || undefined} data-status={r.status}>
          {r.status === 'damaged' ? `⚠ damaged: ${r.warnings[0]}${r.warnings.length > 1 ? ` (+${r.warnings.length - 1})` : ''}` : r.status === 'quiet' ? 'no new data' : r.status}
        </span>
      ),
    },
    { id: 'start', label: 'start', value: (r) => r.start_ts, show: (r) => (r.start_ts === null ? '—' : fmtWall(r.start_ts)) },
    { id: 'duration', label: 'duration', value: duration, show: (r) => (duration(r) === null ? '—' : fmtDuration(duration(r)!)) },
    { id: 'gpus', label: 'GPUs', value: (r) => r.gpus },
    { id: 'steps', label: 'steps', value: (r) => r.steps },
    ...KEY_CONFIG.map((c): Column => ({ id: c.id, label: c.label, title: c.args.join(' / '), value: (r) => scalar(keyConfig(r, c.args)) })),
    { id: 'parallel', label: 'parallelism', title: PARALLELISM.map(([, k]) => k).join(', '), value: parallelism },
    ...argCols.map((a): Column => ({ id: `arg:${a}`, label: a, title: 'meta.json arg', value: (r) => scalar(r.config[a] ?? null) })),
    ...metricKeys.map((k): Column => ({ id: `m:${k}`, label: k.slice(k.lastIndexOf('/') + 1), title: `${k}: latest value`, value: (r) => r.latest[k] ?? null, show: (r) => fmtNum(r.latest[k] ?? null) })),
  ];

  const needle = filter.trim().toLowerCase();
  const shown = useMemo(() => {
    // the columns as the filter reads them: `label=value` as shown, numbers compared as numbers
    const filterColumns: FilterColumn[] = columns.map((c) => ({ id: c.id, label: c.label, value: c.value, text: (r) => cellText(c.value(r)) }));
    const words = filterWords(needle, filterColumns);
    const rows = words.length ? runs.filter((r) => runMatches(r, words, filterColumns)) : [...runs];
    const col = sort === 'name' ? { value: (r: RunListing) => r.id } : columns.find((c) => c.id === sort);
    if (col) {
      rows.sort((a, b) => {
        const x = col.value(a);
        const y = col.value(b);
        if (x === y) return 0;
        if (x === null) return 1;
        if (y === null) return -1;
        const c = typeof x === 'number' && typeof y === 'number' ? x - y : naturalCompare(String(x), String(y));
        return desc ? -c : c;
      });
    }
    return rows;
  }, [runs, needle, sort, desc, columns.map((c) => c.id).join()]);

  if (res.error) return <ErrorNote error={res.error} />;
  if (!res.data) return <Loading what="runs" />;

  const sortBy = (id: string) => setParams({ sort: id, desc: sort === id ? !desc : false }, false);
  const toggle = (id: string) => {
    const next = new Set(picked);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setParams({ pick: runs.filter((r) => next.has(r.id)).map((r) => r.id).join(',') });
  };
  const chosen = runs.filter((r) => picked.has(r.id));
  const ids = chosen.map((r) => r.id);
  const arrow = (id: string) => (sort === id ? (desc ? ' ▾' : ' ▴') : '');

  return (
    <section class="runs-view">
      <h2 class="view-title">
        Runs — {runs.length} served{m?.mode === 'follow' ? ', new runs appear as they start' : ''} <CoverageNote coverage={leastStepCoverage(runs.map((r) => r.coverage))} />
      </h2>
      <div class="runs-controls">
        <input
          type="search"
          placeholder="filter: name, status, arg=value, column=value…"
          aria-label="filter runs"
          value={filter}
          onInput={(e) => {
            const v = (e.currentTarget as HTMLInputElement).value;
            setFilter(v);
            setParams({ q: v });
          }}
        />
        <ColumnChooser label="metric columns" chosen={metricKeys} options={metricOptions?.keys ?? m?.metric_keys ?? []} param="metrics" defaults={DEFAULT_METRICS} held={metricOptions ?? undefined} />
        <ColumnChooser label="arg columns" chosen={argCols} options={allArgs} param="args" defaults={[]} />
        <span class="runs-compare" data-testid="runs-compare">
          {chosen.length < 2 ? (
            <span class="hint">tick two or more runs to compare them</span>
          ) : (
            <>
              compare {ids.join(' · ')}: <a href={href('/', { runs: ids.join(','), run: ids[0] })}>Metrics</a>
              <a href={href('/health', { runs: ids.join(','), run: ids[0] })}>Health</a>
              <PairLink view="rollout" chosen={ids} metas={metas} />
              <PairLink view="timeline" chosen={ids} metas={metas} />
              <PairLink view="diff" chosen={ids} metas={metas} />
            </>
          )}
        </span>
      </div>
      {chosen.length >= 2 && metas && <PairNotes chosen={ids} metas={metas} />}
      <SideScroll class="runs-scroll">
        <table class="runs-table" data-testid="runs-table">
          <thead>
            <tr>
              <th scope="col" class="pick" aria-label="compare" />
              <th scope="col" aria-sort={sort === 'name' ? (desc ? 'descending' : 'ascending') : undefined}>
                <button type="button" onClick={() => sortBy('name')}>
                  run{arrow('name')}
                </button>
              </th>
              {columns.map((c) => (
                <th scope="col" title={c.title} data-col={c.id} aria-sort={sort === c.id ? (desc ? 'descending' : 'ascending') : undefined}>
                  <button type="button" onClick={() => sortBy(c.id)}>
                    {c.label}
                    {arrow(c.id)}
                  </button>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr data-run={r.id} key={r.id}>
                <td class="pick">
                  <input type="checkbox" aria-label={`compare ${r.id}`} checked={picked.has(r.id)} onChange={() => toggle(r.id)} />
                </td>
                <th scope="row">
                  <span class="swatch" style={{ background: runColor(runs, r.id) }} />
                  <a href={href('/', { run: r.id })} title={`open ${r.id}`}>
                    {r.id}
                  </a>
                  {runLabel(r) !== r.id && <span class="run-label">{runLabel(r).slice(r.id.length)}</span>}
                  {r.folder !== undefined && r.folder !== r.id && (
                    <span class="run-folder" data-testid="run-folder" title={`folder ${r.folder}`}>
                      {r.folder}
                    </span>
                  )}
                </th>
                {columns.map((c) => (
                  <td data-col={c.id}>{c.show ? c.show(r) : cellText(c.value(r))}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </SideScroll>
      {shown.length === 0 && (
        <p class="hint">
          No run matches “{filter}”. Each word must occur in a run's name, status or format, as <code>arg=value</code> of its
          recorded args, or as <code>column=value</code> of the table (a number matches however it is written).
        </p>
      )}
    </section>
  );
}

const PAIR_VIEWS: PairView[] = ['rollout', 'timeline', 'diff'];

/** A view that sets two runs side by side: linked with the first two ticked runs that can show it, plain text when fewer can. */
function PairLink({ view, chosen, metas }: { view: PairView; chosen: string[]; metas: RunMetas | null }) {
  const label = view === 'rollout' ? 'Rollouts' : view === 'timeline' ? 'Compute' : 'Diff';
  if (!metas) return <span class="pair-pending">{label}</span>;
  const { ids } = comparedPair(view, chosen, metas);
  if (ids.length < 2) {
    return (
      <span class="pair-off" data-view={view} aria-disabled="true" title="fewer than two ticked runs can show this: see below">
        {label}
      </span>
    );
  }
  const [a, b] = ids as [string, string];
  const to =
    view === 'rollout' ? href('/rollout', { runs: `${a},${b}`, run: a }) : view === 'timeline' ? href('/timeline', { runs: `${a},${b}`, run: a }) : href('/diff', { run: a, run_a: a, run_b: b });
  return (
    <a href={to} data-view={view} title={`${label}: ${a} and ${b}`}>
      {label}
    </a>
  );
}

/** Which ticked runs each two-run view compares, and which it leaves out and why (nothing when it takes the first two). */
function PairNotes({ chosen, metas }: { chosen: string[]; metas: RunMetas }) {
  const notes = PAIR_VIEWS.map((v) => [v, pairNote(v, comparedPair(v, chosen, metas))] as const).filter(([, n]) => n !== null);
  if (!notes.length) return null;
  return (
    <ul class="hint pair-notes" data-testid="pair-notes">
      {notes.map(([v, n]) => (
        <li data-view={v}>{n}</li>
      ))}
    </ul>
  );
}

/**
 * The metric keys the served runs hold between them (each run's logged keys, and the `dump/*` aggregates of a run
 * with rollout dumps), sorted, with how many runs hold each; null until every run's meta has answered.
 */
export function metricKeyOptions(ids: readonly string[], metas: RunMetas | null): { keys: string[]; held: Map<string, number>; runs: number } | null {
  if (!metas) return null;
  const held = new Map<string, number>();
  let runs = 0;
  for (const id of ids) {
    const meta = metas.get(id);
    if (!meta) continue;
    runs++;
    for (const k of new Set([...meta.metric_keys, ...(meta.rollout_ids.train.length ? DUMP_KEYS : [])])) held.set(k, (held.get(k) ?? 0) + 1);
  }
  return { keys: [...held.keys()].sort(naturalCompare), held, runs };
}

/** Adds or removes optional columns (kept in the URL). */
function ColumnChooser(props: { label: string; chosen: string[]; options: string[]; param: string; defaults: string[]; held?: { held: Map<string, number>; runs: number } }) {
  const { label, chosen, options, param, defaults, held } = props;
  const set = (next: string[]) => setParams({ [param]: next.join(',') === defaults.join(',') ? null : next.join(',') || (defaults.length ? ',' : null) }, false);
  return (
    <details class="column-chooser">
      <summary>{label}</summary>
      <div class="column-options">
        {options.map((o) => (
          <label>
            <input type="checkbox" checked={chosen.includes(o)} onChange={() => set(chosen.includes(o) ? chosen.filter((x) => x !== o) : [...chosen, o])} data-option={o} />
            {o}
            {held && (held.held.get(o) ?? 0) < held.runs && <span class="muted held">{` ${held.held.get(o) ?? 0} of ${held.runs} runs`}</span>}
          </label>
        ))}
      </div>
    </details>
  );
}
