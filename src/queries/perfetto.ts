// Chrome trace-event JSON (what ui.perfetto.dev and chrome://tracing open) from a run's answers: request
// traces as complete slices on their sample's threads (every attr in the slice's args), point events as
// instants there, prefill/decode segments on the sample's [P]/[D] threads, compute phases per GPU as
// complete slices, GPU utilisation and engine series as counter tracks, and
// process/thread names as metadata. Times are epoch microseconds.
import type { EngineSeries, Phase, GpuAnswer } from '../wire/timeline.ts';
import type { TraceAnswer, TraceDetails, TraceItemDetails } from '../wire/trace.ts';
import { integerRuns, integerRunsText } from './integerRuns.ts';

export type TraceEventPhase = 'b' | 'e' | 'n' | 'i' | 'X' | 'C' | 'M';

export interface TraceEvent {
  name: string;
  ph: TraceEventPhase;
  /** Microseconds; metadata events carry 0. */
  ts: number;
  pid: number;
  tid: number;
  cat?: string;
  /** Async events: begin and end of one slice share it. */
  id?: string;
  dur?: number;
  /** Instants: `t` (thread) scope. */
  s?: 't' | 'p' | 'g';
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms';
  otherData: Record<string, string | number>;
}

/** One rollout dump's request traces (slime) and each traced row's details, whose attrs become the events' args. */
export interface TraceInput {
  answer: TraceAnswer;
  /** By row; a row without them is written with its times and names only. */
  details: ReadonlyMap<number, TraceDetails>;
}

export interface PerfettoInputs {
  traces?: TraceInput[];
  phases?: Phase[];
  gpu?: GpuAnswer;
  /** Engine series by metric name. */
  engine?: Record<string, EngineSeries[]>;
  /** Only what overlaps [t0, t1] (epoch seconds) is written. */
  t0?: number;
  t1?: number;
  title?: string;
}

const us = (s: number): number => Math.round(s * 1e6);

/**
 * One GPU's phases on as few tracks as keep every track's slices properly nested: Perfetto drops a complete
 * event that starts inside another on its track and ends after it, so such a phase goes to the next track
 * where it nests (or a new one). Each track is in start order, the longer of two equal starts first (the parent).
 */
export function phaseTracks<T extends { t0: number; t1: number }>(phases: readonly T[]): T[][] {
  const sorted = [...phases].sort((a, b) => us(a.t0) - us(b.t0) || us(b.t1) - us(a.t1));
  const tracks: { phases: T[]; open: number[] }[] = [];
  for (const p of sorted) {
    const a = us(p.t0);
    const b = Math.max(a, us(p.t1));
    let track = tracks.find((t) => {
      // slices ended by this start are closed; what is still open must hold the whole phase
      while (t.open.length > 0 && t.open[t.open.length - 1] <= a) t.open.pop();
      return t.open.length === 0 || t.open[t.open.length - 1] >= b;
    });
    if (track === undefined) tracks.push((track = { phases: [], open: [] }));
    track.phases.push(p);
    track.open.push(b);
  }
  return tracks.map((t) => t.phases);
}

/** ` (rank 3)`, ` (ranks 0-3, 8)`, or '' when no phase on the GPU carries a rank (-1: derived, rollout). */
function rankLabel(phases: readonly Phase[]): string {
  const runs = integerRuns(phases.map((p) => p.rank));
  if (runs.length === 0) return '';
  return ` (rank${runs.length > 1 || runs[0][0] !== runs[0][1] ? 's' : ''} ${integerRunsText(phases.map((p) => p.rank))})`;
}

/** The trace for one window. Process ids: 1.. GPU nodes, then the engines (when a point of theirs is in it), then one per rollout dump. */
export function perfettoTrace(inputs: PerfettoInputs): ChromeTrace {
  const events: TraceEvent[] = [];
  const t0 = inputs.t0 ?? -Infinity;
  const t1 = inputs.t1 ?? Infinity;
  const inWindow = (a: number, b: number): boolean => b >= t0 && a <= t1;
  let nextPid = 1;
  const meta = (pid: number, tid: number | null, name: string, sortIndex?: number): void => {
    if (tid === null) {
      events.push({ name: 'process_name', ph: 'M', ts: 0, pid, tid: 0, args: { name } });
      if (sortIndex !== undefined) events.push({ name: 'process_sort_index', ph: 'M', ts: 0, pid, tid: 0, args: { sort_index: sortIndex } });
    } else {
      events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid, args: { name } });
      if (sortIndex !== undefined) events.push({ name: 'thread_sort_index', ph: 'M', ts: 0, pid, tid, args: { sort_index: sortIndex } });
    }
  };

  // Compute timeline: one process per node, a thread per GPU (and more where its phases overlap).
  const nodes = new Map<string, number>();
  const nodePid = (node: string): number => {
    let pid = nodes.get(node);
    if (pid === undefined) {
      nodes.set(node, (pid = nextPid++));
      meta(pid, null, `node ${node}`, pid);
    }
    return pid;
  };
  const byGpu = new Map<string, Phase[]>();
  for (const p of inputs.phases ?? []) {
    if (!inWindow(p.t0, p.t1)) continue;
    const key = `${p.node}:${p.gpu}`;
    const list = byGpu.get(key);
    if (list === undefined) byGpu.set(key, [p]);
    else list.push(p);
  }
  // a GPU's first track keeps tid gpu + 1; its extra tracks take the tids after the node's last GPU
  const nextTid = new Map<string, number>();
  for (const list of byGpu.values()) nextTid.set(list[0].node, Math.max(nextTid.get(list[0].node) ?? 1, list[0].gpu + 2));
  for (const list of byGpu.values()) {
    const { node, gpu } = list[0];
    const pid = nodePid(node);
    const name = `gpu ${gpu}${rankLabel(list)}`;
    phaseTracks(list).forEach((track, i) => {
      let tid = gpu + 1;
      if (i > 0) nextTid.set(node, (tid = nextTid.get(node)!) + 1);
      meta(pid, tid, i === 0 ? name : `${name} #${i + 1}`);
      for (const p of track) {
        events.push({ name: p.name, ph: 'X', ts: us(p.t0), dur: Math.max(0, us(p.t1) - us(p.t0)), pid, tid, cat: 'phase', args: { rank: p.rank, role: p.role } });
      }
    });
  }
  for (const [key, series] of Object.entries(inputs.gpu?.lanes ?? {})) {
    const cut = key.lastIndexOf(':');
    const node = key.slice(0, cut);
    const gpu = Number(key.slice(cut + 1));
    const pid = nodePid(node);
    for (let i = 0; i < series.ts.length; i++) {
      const t = series.ts[i];
      if (t < t0 || t > t1 || !Number.isFinite(series.util[i])) continue;
      events.push({ name: `gpu ${gpu} util %`, ph: 'C', ts: us(t), pid, tid: 0, args: { util: series.util[i] } });
    }
  }
  // the engines' process is named at its first point: a window without one has no empty process
  let enginePid: number | undefined;
  for (const [metric, list] of Object.entries(inputs.engine ?? {})) {
    for (const s of list) {
      for (let i = 0; i < s.ts.length; i++) {
        const v = s.value[i];
        if (s.ts[i] < t0 || s.ts[i] > t1 || v === null || !Number.isFinite(v)) continue;
        if (enginePid === undefined) meta((enginePid = nextPid++), null, 'SGLang engines', enginePid);
        events.push({ name: `${metric} ${s.addr}`, ph: 'C', ts: us(s.ts[i]), pid: enginePid, tid: 0, args: { value: v } });
      }
    }
  }

  // Request traces: one process per dump, a sample's spans as complete events on its own threads. Not async
  // b/e slices: Perfetto's JSON importer keys those by cat/id/name and ignores their tid
  // (json_trace_parser.cc, `case 'b'`: InternLegacyAsyncTrack(name, upid, cookie = hash(cat, id))), so every
  // span would land on a global track named after it, mixed with every other sample's. An `X` event goes on
  // its thread's track (`case 'X'`: InternThreadTrack(utid)). A track must nest properly, so a span that
  // overlaps another without nesting goes to a further thread of the same sample, as phaseTracks packs a
  // GPU's phases; each track is written parents first (the longer of two equal starts).
  for (const { answer: tr, details } of inputs.traces ?? []) {
    const pid = nextPid++;
    meta(pid, null, `${tr.evaluation ? 'eval ' : ''}rollout ${tr.rollout_id} requests`, pid);
    // a sample's threads take consecutive tids, sorted by them, so they stay together
    let nextTraceTid = 1;
    for (const row of tr.rows) {
      if (!inWindow(tr.t0 + row.start, tr.t0 + row.end)) continue;
      const label = `sample #${row.sample_index ?? row.row}${row.group_index !== null ? ` g${row.group_index}` : ''} ${row.status ?? ''}`.trim();
      const det = details.get(row.row);
      const common = { trace_id: row.trace_id, sample_index: row.sample_index };
      const spans: Slice[] = [];
      const pd: Record<'P' | 'D', Slice[]> = { P: [], D: [] };
      const recorded: Slice[] = [];
      const points: TraceEvent[] = [];
      const drawn = new Set<number>();
      for (const it of row.items) {
        drawn.add(it.id);
        const a = tr.t0 + it.start;
        const b = tr.t0 + it.end;
        if (!inWindow(a, b)) continue;
        const d = det?.items[it.id];
        if (it.kind === 'point' || it.kind === 'orphan') {
          const name = it.kind === 'orphan' ? `${it.name} (end without start)` : it.name;
          points.push({ name, ph: 'i', s: 't', ts: us(a), pid, tid: 0, cat: it.kind, args: { attempt: it.attempt, ...common, ...itemArgs(d) } });
        } else if (it.kind === 'pd') {
          pd[it.role ?? 'P'].push({ name: `[${it.role}] ${it.name}`, t0: a, t1: b, cat: 'pd', args: { attempt: it.attempt, ...common, ...itemArgs(d, det) } });
        } else {
          const args: Record<string, unknown> = { attempt: it.attempt, ...common, ...itemArgs(d) };
          if (it.clipped_by && args.clipped_by === undefined) args.clipped_by = it.clipped_by;
          spans.push({ name: it.name, t0: a, t1: b, cat: it.kind === 'open' ? 'open_span' : 'span', args });
        }
      }
      // Recorded sglang_pd_* spans the view draws as [P]/[D] segments are written too, at the times slime
      // recorded, so the export holds every span of the dump.
      det?.items.forEach((d, i) => {
        if (drawn.has(i) || d.end === null || !inWindow(d.start, d.end)) return;
        recorded.push({ name: d.name, t0: d.start, t1: d.end, cat: 'pd_recorded', args: { attempt: d.attempt, ...common, ...itemArgs(d) } });
      });
      const groups: [string, Slice[]][] = [['', spans], [' [P]', pd.P], [' [D]', pd.D], [' PD as recorded', recorded]];
      let firstTid = 0;
      for (const [suffix, list] of groups) {
        const tracks = phaseTracks(list);
        // the sample's first thread is there even without spans: its instants go on it
        if (suffix === '' && tracks.length === 0) tracks.push([]);
        tracks.forEach((track, i) => {
          const tid = nextTraceTid++;
          if (firstTid === 0) firstTid = tid;
          meta(pid, tid, `${label}${suffix}${i > 0 ? ` #${i + 1}` : ''}`, tid);
          for (const sl of track) events.push({ name: sl.name, ph: 'X', ts: us(sl.t0), dur: Math.max(0, us(sl.t1) - us(sl.t0)), pid, tid, cat: sl.cat, args: sl.args });
        });
      }
      for (const e of points) events.push({ ...e, tid: firstTid });
    }
  }
  return { traceEvents: events, displayTimeUnit: 'ms', otherData: { producer: 'rlsight', ...(inputs.title ? { title: inputs.title } : {}) } };
}

/** A request-trace slice before it is given a thread. */
interface Slice {
  name: string;
  /** Epoch seconds. */
  t0: number;
  t1: number;
  cat: string;
  args: Record<string, unknown>;
}

/**
 * Characters of one attr value's JSON an export keeps: slime's attrs are small (token counts, latencies, ids,
 * an error message), but a span may carry a whole traceback or prompt; a longer value is cut, and says so,
 * so one attr cannot blow up a file Perfetto has to load whole.
 */
export const MAX_ARG_CHARS = 8192;

function boundedValue(v: unknown): unknown {
  if (typeof v === 'string') return v.length <= MAX_ARG_CHARS ? v : `${v.slice(0, MAX_ARG_CHARS)}… (cut: ${v.length} characters in all)`;
  if (v === null || typeof v !== 'object') return v;
  const json = JSON.stringify(v);
  return json.length <= MAX_ARG_CHARS ? v : `${json.slice(0, MAX_ARG_CHARS)}… (cut: ${json.length} characters of JSON in all)`;
}

/** Each attr of a record, bounded. */
function boundedAttrs(rec: unknown): unknown {
  if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) return boundedValue(rec);
  return Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, boundedValue(v)]));
}

/**
 * An item's details as a slice's args (what Perfetto's details panel shows for it): its span ids, parent, note,
 * and every attr (`start_attrs`/`end_attrs` of a span, `attrs` of an event, the duration of a PD segment and
 * the span it was recorded as), each bounded by MAX_ARG_CHARS.
 */
function itemArgs(d: TraceItemDetails | undefined, all?: TraceDetails): Record<string, unknown> {
  if (!d) return {};
  const args: Record<string, unknown> = {};
  if (d.span_id !== null) args.span_id = d.span_id;
  if (d.parent_span_id !== null) args.parent_span_id = d.parent_span_id;
  if (d.parent_name !== null) args.parent_name = d.parent_name;
  if (d.clipped_by !== undefined) args.clipped_by = d.clipped_by;
  if (d.note !== undefined) args.note = d.note;
  if (d.kind === 'point' || d.kind === 'orphan') args.attrs = boundedAttrs(d.attrs);
  else for (const [k, v] of Object.entries(d.attrs)) args[k] = boundedAttrs(v);
  const rec = d.recorded !== undefined ? all?.items[d.recorded] : undefined;
  if (rec) args.recorded_as = { name: rec.name, span_id: rec.span_id, start_us: us(rec.start), end_us: rec.end === null ? null : us(rec.end) };
  return args;
}

/** Perfetto's UI loads traces up to about this size (500 MB); a bigger export must be cut into windows. */
export const PERFETTO_MAX_BYTES = 500e6;

/** A file's size as the README writes file sizes: in decimal MB, 10^6 bytes (memory is in MiB). */
export function fileSizeText(bytes: number): string {
  return `${(bytes / 1e6).toFixed(2)} MB`;
}

/** Why an export of `bytes` cannot be opened in Perfetto (the window named by `bounds` should be narrower), or null. */
export function tooBigToLoad(bytes: number, bounds: string): string | null {
  return bytes > PERFETTO_MAX_BYTES ? `the export would be ${fileSizeText(bytes)}, above the ~${PERFETTO_MAX_BYTES / 1e6} MB Perfetto loads; give a narrower ${bounds} window` : null;
}

/** Whether a trace holds only track names: nothing of the run lies in the window asked (or could be read). */
export function holdsNothing(trace: ChromeTrace): boolean {
  return trace.traceEvents.every((e) => e.ph === 'M');
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/**
 * Why an export of a window holds nothing, and where what an export draws lies (`span`, as `perfettoSpan`
 * finds it; not the run's whole time range: its metrics may begin long before): the CLI's words and the app's.
 * `names` are what the asker calls the bounds (`--t0` or `t0`).
 */
export function nothingToExportText(
  window: { t0?: number; t1?: number },
  span: { t0: number; t1: number; kinds: readonly string[] } | null,
  names: { t0: string; t1: string },
): string {
  const { t0, t1 } = window;
  const between = t0 !== undefined || t1 !== undefined ? ` between ${names.t0} ${t0 ?? '(start)'} and ${names.t1} ${t1 ?? '(end)'}` : '';
  const where = span
    ? `; the run's ${listed(span.kinds)} span ${span.t0.toFixed(3)} to ${span.t1.toFixed(3)} (Unix seconds)`
    : '; the run has no phases, GPU utilisation, engine series or request traces to draw';
  return `nothing to export${between}${where}`;
}
