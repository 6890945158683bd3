// The Trace view's layout of a slime dump: one row per traced sample, spans in concurrency lanes (a span
// never overlaps another in its lane), point events on their parent's lane, and per request a [P] and a
// [D] lane of prefill / decode segments read from either layout (legacy flat `pd_*` attrs on the request
// span, or the current `sglang_pd_*` child spans), placed where SGLang's own time stamps put them, so
// the overlapping durations overlap instead of being laid end to end.
import { PyFloat } from '../formats/torch/value.ts';
import { isRecord, pyNumber, sampleTrace, traceEvents, type SlimeSample, type SlimeValue } from '../run/model.ts';
import type { TraceAnswer, TraceDetails, TraceItem, TraceItemDetails, TraceRow } from '../wire/trace.ts';
import { buildTraceItems, type CacheItem, type CacheSpanItem, type CacheValue } from './slimeTimeline.ts';
import { traceRequests } from './slimePerf.ts';

/** A CacheValue as plain JSON (integral floats as numbers, non-finite numbers as null on the wire). */
export function plainJson(v: CacheValue): unknown {
  if (v instanceof PyFloat) return v.value;
  if (Array.isArray(v)) return v.map(plainJson);
  if (v !== null && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = plainJson(x);
    return o;
  }
  return v;
}

const str = (v: CacheValue | undefined): string | null => (typeof v === 'string' ? v : v === null || v === undefined ? null : String(plainJson(v)));

interface Segment {
  role: 'P' | 'D';
  key: string;
  start: number;
  end: number;
  inner: boolean;
}

/**
 * Where SGLang's PD durations lie, relative to the request start (the dump holds durations only). From
 * SGLang's timestamps: prefill bootstrap_queue = bootstrap + alloc_wait, forward contains transfer_queue
 * (both end at completion); decode prealloc = bootstrap + alloc_wait, then transfer, then forward.
 * Both instances start when the request is sent, so [P] and [D] run side by side.
 */
export function pdSegments(v: Map<string, number>): Segment[] {
  const out: Segment[] = [];
  const d = (k: string): number | undefined => {
    const x = v.get(k);
    return x !== undefined && x > 0 ? x : undefined;
  };
  const put = (role: 'P' | 'D', key: string, start: number, len: number | undefined, inner: boolean): void => {
    if (len !== undefined) out.push({ role, key, start, end: start + len, inner });
  };
  const boot = d('pd_prefill_bootstrap_duration');
  const alloc = d('pd_prefill_alloc_wait_duration');
  const bq = d('pd_prefill_bootstrap_queue_duration') ?? ((boot ?? 0) + (alloc ?? 0) || undefined);
  const outer = d('pd_prefill_bootstrap_queue_duration') !== undefined;
  put('P', 'pd_prefill_bootstrap_queue_duration', 0, d('pd_prefill_bootstrap_queue_duration'), false);
  put('P', 'pd_prefill_bootstrap_duration', 0, boot, outer);
  put('P', 'pd_prefill_alloc_wait_duration', boot ?? 0, alloc, outer);
  const fwdStart = bq ?? 0;
  const fwd = d('pd_prefill_forward_duration');
  put('P', 'pd_prefill_forward_duration', fwdStart, fwd, false);
  const tq = d('pd_prefill_transfer_queue_duration');
  if (tq !== undefined) put('P', 'pd_prefill_transfer_queue_duration', fwd !== undefined ? fwdStart + fwd - tq : fwdStart, tq, fwd !== undefined && tq <= fwd);
  const dboot = d('pd_decode_bootstrap_duration');
  const dalloc = d('pd_decode_alloc_wait_duration');
  const pre = d('pd_decode_prealloc_duration') ?? ((dboot ?? 0) + (dalloc ?? 0) || undefined);
  put('D', 'pd_decode_prealloc_duration', 0, d('pd_decode_prealloc_duration'), false);
  put('D', 'pd_decode_bootstrap_duration', 0, dboot, d('pd_decode_prealloc_duration') !== undefined);
  put('D', 'pd_decode_alloc_wait_duration', dboot ?? 0, dalloc, d('pd_decode_prealloc_duration') !== undefined);
  const xfer = d('pd_decode_transfer_duration');
  put('D', 'pd_decode_transfer_duration', pre ?? 0, xfer, false);
  put('D', 'pd_decode_forward_duration', (pre ?? 0) + (xfer ?? 0), d('pd_decode_forward_duration'), false);
  return out;
}

/** Greedy interval lanes: the first lane at or after `min` free over [start, end). */
class LaneBook {
  private readonly busy: Array<Array<[number, number]>> = [];
  free(lane: number, start: number, end: number): boolean {
    return (this.busy[lane] ?? []).every(([a, b]) => end <= a || start >= b);
  }
  take(min: number, start: number, end: number): number {
    let lane = min;
    while (!this.free(lane, start, end)) lane++;
    (this.busy[lane] ??= []).push([start, Math.max(end, start)]);
    return lane;
  }
}

interface RowLayout {
  row: TraceRow;
  details: TraceItemDetails[];
}

/** A span's details: every attr, copied; `note` for a recorded span shown as segments (never open, never clipped). */
function spanDetails(it: CacheSpanItem, note?: string): TraceItemDetails {
  const open = note === undefined && it.state === 'open_span';
  return {
    kind: open ? 'open' : 'span',
    name: str(it.name) ?? '',
    start: it.start_ts,
    end: it.end_ts,
    attempt: it.attempt,
    span_id: str(it.span_id),
    parent_span_id: str(it.parent_span_id),
    parent_name: str(it.parent_span_name),
    ...(open ? { clipped_by: str(it.attrs.end_attrs.clipped_by) ?? undefined } : {}),
    ...(note === undefined ? {} : { note }),
    attrs: { start_attrs: plainJson(it.attrs.start_attrs), end_attrs: plainJson(it.attrs.end_attrs) },
  };
}
function layoutRow(sample: SlimeSample, t0: number, withDetails: boolean): RowLayout | null {
  const trace = sampleTrace(sample);
  if (!trace) return null;
  // Our own [P]/[D] lanes replace slime's virtual ones, so those are not built.
  const items = buildTraceItems(trace, false);
  if (!items) return null;
  const spans = items.filter((i): i is CacheSpanItem => i.type === 'span');
  const byId = new Map<string, CacheSpanItem>();
  for (const s of spans) if (typeof s.span_id === 'string') byId.set(s.span_id, s);
  const children = new Map<CacheSpanItem | null, CacheSpanItem[]>();
  for (const s of spans) {
    const p = typeof s.parent_span_id === 'string' ? (byId.get(s.parent_span_id) ?? null) : null;
    let list = children.get(p);
    if (!list) children.set(p, (list = []));
    list.push(s);
  }
  // The requests and their PD segments come first: a recorded sglang_pd_* span is left out of the span lanes
  // only when a segment was built from its values (or it holds only such spans), so nothing vanishes when no
  // segment could be (an open or differently named request span, a pd_* value of a type slime does not count).
  const requests = traceRequests(traceEvents(trace)).map((r) => {
    const span = r.spanId ? byId.get(r.spanId) : undefined;
    return { r, span, segs: span ? pdSegments(r.values) : [] };
  });
  const used = new Set<string>();
  for (const { r, segs } of requests) for (const sg of segs) {
    const from = r.from.get(sg.key);
    if (from !== undefined) used.add(from);
  }
  const hiddenMemo = new Map<CacheSpanItem, boolean>();
  const isHidden = (sp: CacheSpanItem): boolean => {
    let h = hiddenMemo.get(sp);
    if (h === undefined) {
      // a damaged dump's parent ids may run in a circle: a span met again on the way down is drawn
      hiddenMemo.set(sp, false);
      const kids = children.get(sp) ?? [];
      h = typeof sp.name === 'string' && sp.name.startsWith('sglang_pd_') && sp.state !== 'open_span' && (used.has(String(sp.span_id)) || kids.length > 0) && kids.every(isHidden);
      hiddenMemo.set(sp, h);
    }
    return h;
  };
  // A point whose parent span is drawn as segments sits on the lane of the nearest drawn ancestor.
  const drawnAncestor = (id: CacheValue): CacheSpanItem | undefined => {
    let at = typeof id === 'string' ? byId.get(id) : undefined;
    for (let hops = 0; at && isHidden(at) && hops < 64; hops++) at = typeof at.parent_span_id === 'string' ? byId.get(at.parent_span_id) : undefined;
    return at && !isHidden(at) ? at : undefined;
  };
  const book = new LaneBook();
  const laneOf = new Map<CacheItem, number>();
  const visit = (parent: CacheSpanItem | null, min: number): void => {
    const kids = (children.get(parent) ?? []).filter((k) => !isHidden(k)).sort((a, b) => a.start_ts - b.start_ts);
    for (const k of kids) {
      const lane = book.take(min, k.start_ts, k.display_end_ts);
      laneOf.set(k, lane);
      visit(k, lane + 1);
    }
  };
  visit(null, 0);
  let spanLanes = 0;
  for (const l of laneOf.values()) spanLanes = Math.max(spanLanes, l + 1);
  spanLanes = Math.max(spanLanes, 1);

  const out: TraceItem[] = [];
  const details: TraceItemDetails[] = [];
  const rel = (x: number): number => Math.round((x - t0) * 1e6) / 1e6;
  // Details (every attr, copied) are built only when asked for: the row answer needs just the ids.
  let nextId = 0;
  const addDetails = (d: () => TraceItemDetails): number => {
    if (withDetails) details.push(d());
    return nextId++;
  };
  // the details index of each recorded span that segments stand for (by span id)
  const recordedId = new Map<string, number>();
  for (const it of items) {
    if (it.type === 'span' && isHidden(it)) {
      const id = addDetails(() => spanDetails(it, STACKED_PD_NOTE));
      if (typeof it.span_id === 'string') recordedId.set(it.span_id, id);
      continue;
    }
    if (it.type === 'span') {
      const id = addDetails(() => spanDetails(it));
      out.push({
        kind: it.state === 'open_span' ? 'open' : 'span',
        name: str(it.name) ?? '',
        start: rel(it.start_ts),
        end: rel(it.display_end_ts),
        lane: laneOf.get(it) ?? 0,
        attempt: it.attempt,
        id,
        ...(it.state === 'open_span' ? { clipped_by: str(it.attrs.end_attrs.clipped_by) ?? 'self' } : {}),
        ...withAttrText(attrText(it.attrs.start_attrs, it.attrs.end_attrs)),
      });
    } else {
      const parent = typeof it.parent_span_id === 'string' ? byId.get(it.parent_span_id) : undefined;
      const lane = parent ? (laneOf.get(drawnAncestor(it.parent_span_id) ?? parent) ?? 0) : 0;
      const id = addDetails(() => ({
        kind: it.type === 'event' ? 'point' : 'orphan',
        name: str(it.name) ?? '',
        start: it.ts,
        end: null,
        attempt: it.attempt,
        span_id: str(it.span_id),
        parent_span_id: str(it.parent_span_id),
        parent_name: str(it.parent_span_name),
        attrs: plainJson(it.attrs) as Record<string, unknown>,
      }));
      out.push({
        kind: it.type === 'event' ? 'point' : 'orphan',
        name: str(it.name) ?? '',
        start: rel(it.ts),
        end: rel(it.ts),
        lane,
        attempt: it.attempt,
        id,
        ...(parent ? {} : { orphan_parent: true }),
        ...withAttrText(attrText(it.attrs)),
      });
    }
  }

  // Requests and their PD segments, one [P] and one [D] lane below the spans (more when requests overlap).
  const lanes: string[] = Array.from({ length: spanLanes }, () => '');
  const pdBook = new LaneBook();
  const pdLaneLabel = new Map<number, string>();
  const requestIds: string[] = [];
  for (const { r, span, segs } of requests) {
    if (span) {
      const rid = span.attrs.end_attrs.sglang_request_id;
      if (typeof rid === 'string') requestIds.push(rid);
    }
    if (!span || segs.length === 0) continue;
    const base = span.start_ts;
    for (const role of ['P', 'D'] as const) {
      const mine = segs.filter((s) => s.role === role);
      if (mine.length === 0) continue;
      const lo = base + Math.min(...mine.map((s) => s.start));
      const hi = base + Math.max(...mine.map((s) => s.end));
      // Each request's [P] (and [D]) segments share a lane; overlapping requests get a further pair.
      let pair = 0;
      while (!pdBook.free(pair * 2 + (role === 'P' ? 0 : 1), lo, hi)) pair++;
      pdBook.take(pair * 2 + (role === 'P' ? 0 : 1), lo, hi);
      const lane = spanLanes + pair * 2 + (role === 'P' ? 0 : 1);
      pdLaneLabel.set(lane, `[${role}]`);
      for (const s of mine) {
        const from = r.from.get(s.key);
        const recorded = from !== undefined ? recordedId.get(from) : undefined;
        // the recorded span (and its sglang_pd_* ancestors) a segment stands for stay searchable by name
        const names: string[] = [];
        for (let at = from !== undefined ? byId.get(from) : undefined; at && isHidden(at) && names.length < 64; at = typeof at.parent_span_id === 'string' ? byId.get(at.parent_span_id) : undefined) names.push(`span=${str(at.name)}`);
        const id = addDetails(() => ({
          kind: 'pd',
          name: s.key.replace(/^pd_/, '').replace(/_duration$/, ''),
          start: base + s.start,
          end: base + s.end,
          attempt: span.attempt,
          span_id: null,
          parent_span_id: str(span.span_id),
          parent_name: str(span.name),
          ...(recorded !== undefined ? { recorded } : {}),
          attrs: { [s.key]: r.values.get(s.key), placed: 'relative to the request start; the dump holds durations, not SGLang time stamps' },
        }));
        out.push({ kind: 'pd', name: s.key.replace(/^pd_(prefill|decode)_/, '').replace(/_duration$/, ''), start: rel(base + s.start), end: rel(base + s.end), lane, attempt: span.attempt, id, role, ...(s.inner ? { inner: true } : {}), ...withAttrText(names.length ? names.join(' ') : undefined) });
      }
    }
  }
  const maxLane = Math.max(spanLanes - 1, ...pdLaneLabel.keys());
  for (let l = spanLanes; l <= maxLane; l++) lanes.push(pdLaneLabel.get(l) ?? '');

  const f = sample.fields;
  const starts = out.map((i) => i.start);
  const ends = out.map((i) => i.end);
  const reward = pyNumber(f.reward);
  const row: TraceRow = {
    row: sample.row,
    sample_index: sample.key,
    group_index: pyNumber(f.group_index) ?? null,
    status: typeof f.status === 'string' ? f.status : null,
    reward: reward !== undefined && Number.isFinite(reward) ? reward : null,
    source: sourceOf(f),
    label: typeof f.label === 'string' ? f.label.slice(0, 256) : pyNumber(f.label) !== undefined ? String(pyNumber(f.label)) : null,
    trace_id: typeof trace.trace_id === 'string' ? trace.trace_id : null,
    attempts: Math.max(0, ...out.map((i) => i.attempt)),
    start: Math.min(...starts),
    end: Math.max(...ends),
    lanes,
    items: out,
    request_ids: requestIds,
    open_spans: out.filter((i) => i.kind === 'open').length,
    orphans: out.filter((i) => i.kind === 'orphan').length,
  };
  return { row, details };
}

/** What a recorded sglang_pd_* span drawn as [P]/[D] segments says in its details. */
export const STACKED_PD_NOTE =
  "recorded in slime's stacked PD layout (its times lay SGLang's phases end to end from the request start); drawn as the [P]/[D] segments built from its duration, placed relative to the request start (the dump holds durations, not SGLang time stamps)";

const withAttrText = (text: string | undefined): { attr_text?: string } => (text === undefined ? {} : { attr_text: text });

/** Longest attr value kept in an item's search text. */
const ATTR_TEXT_VALUE_CHARS = 80;

/** An item's scalar attrs as `key=value` words (nested records one level down), or undefined when it has none. */
export function attrText(...records: (SlimeValue | undefined)[]): string | undefined {
  const words: string[] = [];
  for (const rec of records) {
    if (!isRecord(rec)) continue;
    for (const [k, v] of Object.entries(rec)) {
      const value = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' ? String(v) : pyNumber(v) !== undefined ? String(pyNumber(v)) : null;
      if (value !== null && value !== '') words.push(`${k}=${value.slice(0, ATTR_TEXT_VALUE_CHARS)}`);
    }
  }
  return words.length ? words.join(' ') : undefined;
}

function sourceOf(f: SlimeSample['fields']): string | null {
  if (typeof f.source === 'string' && f.source) return f.source;
  const m = f.metadata;
  if (!isRecord(m)) return null;
  for (const k of ['source', 'source_name']) if (typeof m[k] === 'string' && m[k]) return m[k] as string;
  for (const [k, v] of Object.entries(m)) if (k.toLowerCase().includes('source') && typeof v === 'string' && v) return v;
  return null;
}

function earliest(samples: readonly SlimeSample[]): number {
  let t0 = Infinity;
  for (const s of samples) {
    const ev = sampleTrace(s)?.events;
    if (!Array.isArray(ev)) continue;
    for (const e of ev) if (isRecord(e)) {
      const ts = pyNumber(e.ts);
      if (ts !== undefined && Number.isFinite(ts) && ts < t0) t0 = ts;
    }
  }
  return Number.isFinite(t0) ? t0 : 0;
}

/** `span` widened to the first start and last end of a trace answer's rows (absolute seconds); null while none. */
export function widenedByTrace(span: [number, number] | null, tr: TraceAnswer): [number, number] | null {
  for (const row of tr.rows) {
    const a = tr.t0 + row.start;
    const b = tr.t0 + row.end;
    if (Number.isFinite(a) && Number.isFinite(b)) span = span === null ? [a, b] : [Math.min(span[0], a), Math.max(span[1], b)];
  }
  return span;
}

/** The Trace view of one dump. */
export function traceView(samples: readonly SlimeSample[], source: { rolloutId: number; evaluation: boolean }): TraceAnswer {
  const t0 = earliest(samples);
  const rows: TraceRow[] = [];
  let untraced = 0;
  // a trace there but with no event to place (no `events` list, or events without a time stamp)
  let unplaced = 0;
  const counts = new Map<string, number>();
  for (const s of samples) {
    const l = layoutRow(s, t0, false);
    if (!l) {
      if (sampleTrace(s)) unplaced++;
      else untraced++;
      continue;
    }
    rows.push(l.row);
    for (const it of l.row.items) counts.set(it.name, (counts.get(it.name) ?? 0) + 1);
  }
  const notes: string[] = [];
  if (rows.some((r) => r.lanes.includes('[P]'))) {
    notes.push('[P]/[D] segments are placed from SGLang durations relative to the request start: overlapping phases overlap (bootstrap queue = bootstrap + alloc wait; transfer queue inside forward).');
  }
  if (untraced) notes.push(`${untraced} of ${samples.length} samples carry no trace`);
  if (unplaced) notes.push(`${unplaced} of ${samples.length} samples carry a trace with no event to place (its \`events\` missing or not a list, or their \`ts\` missing): the dump is damaged or not written by slime's tracing`);
  return {
    has_traces: true,
    rollout_id: source.rolloutId,
    evaluation: source.evaluation,
    t0,
    rows,
    untraced,
    names: [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([n]) => n),
    notes,
  };
}

/** Every item of one sample with all its attrs (the view's details panel). */
export function traceDetails(sample: SlimeSample): TraceDetails | null {
  const l = layoutRow(sample, 0, true);
  if (!l) return null;
  return { row: sample.row, sample_index: l.row.sample_index, trace_id: l.row.trace_id, items: l.details };
}
