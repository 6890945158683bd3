// slime's trace timeline cache (`<stem>.trace_timeline_cache.json`, cache_version 1), built from dumped
// samples exactly as slime's viewer builds it: event normalisation with the inferred-parent stack,
// spans / point events / orphan ends, depth lanes, open spans clipped with a reason, the legacy [P]/[D]
// virtual lanes, rounding to 6 decimals. Values keep Python's int/float distinction (PyFloat) so the
// JSON text can match slime's byte for byte.
import { NumpyScalar, PyFloat, Tensor } from '../formats/torch/value.ts';
import {
  isRecord,
  Opaque,
  numpyStr,
  pyFloatOf,
  pyNumber,
  sampleTrace,
  type SlimeSample,
  type SlimeValue,
} from '../run/model.ts';
import { pyRepr } from '../formats/pythonFormat.ts';
import { pyString } from '../formats/pythonJson.ts';

export const TIMELINE_CACHE_VERSION = 1;

/** A JSON-safe value as slime's `_json_safe` leaves it (PyFloat marks an integral float). */
export type CacheValue = null | boolean | number | string | PyFloat | CacheValue[] | { [key: string]: CacheValue };
export type CacheAttrs = { [key: string]: CacheValue };

/** What spans and points of the timeline cache both carry: where they sit and whose child they are. */
interface CacheItemPlace {
  attempt: number;
  span_id: CacheValue;
  parent_span_id: CacheValue;
  parent_span_name: CacheValue;
  lane: number;
  depth: number;
}

export interface CacheSpanItem extends CacheItemPlace {
  type: 'span';
  state: 'closed_span' | 'open_span';
  name: CacheValue;
  start_ts: number;
  end_ts: number | null;
  display_end_ts: number;
  attrs: { start_attrs: CacheAttrs; end_attrs: CacheAttrs };
}

export interface CachePointItem extends CacheItemPlace {
  type: 'event' | 'orphan_end';
  state: 'point_event' | 'orphan_end';
  name: CacheValue;
  ts: number;
  attrs: CacheAttrs;
}

export type CacheItem = CacheSpanItem | CachePointItem;

export interface TimelineRow {
  row_id: number;
  sample_index: CacheValue;
  group_index: CacheValue;
  source: string | null;
  status: string | null;
  label: string | null;
  reward: CacheValue;
  trace_id: CacheValue;
  attempt: number;
  start: number;
  end: number;
  duration: number | PyFloat | null;
  lane_count: number;
  item_count: number;
  closed_span_count: number;
  open_span_count: number;
  point_event_count: number;
  orphan_count: number;
  total_response_length: number;
  max_response_length: number;
  items: CacheItem[];
}

export interface TimelineCache {
  cache_version: number;
  pt_path: string;
  generated_at: number;
  sample_count: number;
  global_start: number | null;
  global_end: number | null;
  rows: TimelineRow[];
}

/** The keys of the legacy flat PD attrs that make slime's viewer add a virtual [P] / [D] lane. */
export const PD_LANE_SPECS: ReadonlyArray<readonly [role: 'prefill' | 'decode', letter: 'P' | 'D', keys: readonly string[]]> = [
  ['prefill', 'P', ['pd_prefill_bootstrap_queue_duration', 'pd_prefill_bootstrap_duration', 'pd_prefill_alloc_wait_duration', 'pd_prefill_forward_duration', 'pd_prefill_transfer_queue_duration']],
  ['decode', 'D', ['pd_decode_prealloc_duration', 'pd_decode_bootstrap_duration', 'pd_decode_alloc_wait_duration', 'pd_decode_transfer_duration', 'pd_decode_forward_duration']],
];

/** Python's `round(x, 6)` (correctly rounded, half to even on the exact binary value). */
export function round6(x: number): number {
  if (!Number.isFinite(x)) return x;
  // toFixed rounds the exact binary value too, differing from Python only on an exact tie (it rounds up,
  // Python to even): only values near a tie take the exact path.
  const y = x * 1e6;
  if (Math.abs(y - Math.floor(y) - 0.5) > 1e-3) return Number(x.toFixed(6));
  return Number(pyFixed6(x));
}

function pyFixed6(x: number): string {
  const plain = x.toFixed(6);
  const exact = x.toFixed(66);
  const rest = exact.slice(exact.length - 60);
  if (!/^50*$/.test(rest)) return plain;
  const truncated = exact.slice(0, exact.length - 60);
  return Number(truncated.slice(-1)) % 2 === 0 ? truncated : plain;
}

/** `_json_safe`: scalars kept, dicts and lists walked, anything else as Python's `str`. */
export function jsonSafe(v: SlimeValue | undefined): CacheValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string' || v instanceof PyFloat) return v;
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v instanceof Tensor) return `tensor(<${v.dtype} ${JSON.stringify(v.shape)}>)`;
  if (v instanceof Opaque) return v.text;
  // numpy float64 is a Python float and kept; any other numpy scalar is not a str/int/float/bool: its str().
  if (v instanceof NumpyScalar) return v.dtype === 'float64' ? floatOf(v.value as number) : numpyStr(v);
  const out: CacheAttrs = {};
  for (const [k, x] of Object.entries(v)) out[k] = jsonSafe(x);
  return out;
}

function attrsOf(v: SlimeValue | undefined): CacheAttrs {
  // `raw.get("attrs") or {}`: a falsy value is an empty dict; a non-dict truthy value is kept as is by
  // slime (and breaks its viewer); we keep only dicts.
  const safe = jsonSafe(v);
  return typeof safe === 'object' && safe !== null && !Array.isArray(safe) && !(safe instanceof PyFloat) ? safe : {};
}

interface NormEvent {
  order: number;
  ts: number;
  type: CacheValue;
  name: CacheValue;
  attempt: number;
  spanId: CacheValue;
  parentSpanId: CacheValue;
  inferredParent: CacheValue;
  attrs: CacheAttrs;
}

function truthy(v: CacheValue): boolean {
  if (v === null || v === false || v === 0 || v === '') return false;
  if (v instanceof PyFloat) return v.value !== 0;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function pyInt(v: SlimeValue | undefined): number {
  const n = pyFloatOf(v);
  return n === undefined || !Number.isFinite(n) ? 0 : Math.trunc(n);
}

/** `_normalize_trace_events`: events in recording order with the parent the open-span stack implies. */
export function normalizeTraceEvents(trace: { [key: string]: SlimeValue }): NormEvent[] {
  const raw = trace.events;
  const out: NormEvent[] = [];
  if (!Array.isArray(raw)) return out;
  const traceAttempt = trace.attempt;
  const stack: CacheValue[] = [];
  raw.forEach((ev, order) => {
    if (!isRecord(ev)) return;
    const ts = pyFloatOf(ev.ts);
    if (ts === undefined) return;
    const attemptRaw = 'attempt' in ev ? ev.attempt : (traceAttempt ?? 0);
    const e: NormEvent = {
      order,
      ts,
      type: jsonSafe(ev.type),
      name: jsonSafe(ev.name),
      attempt: attemptRaw === null || attemptRaw === undefined ? 0 : pyInt(attemptRaw),
      spanId: jsonSafe(ev.span_id),
      parentSpanId: jsonSafe(ev.parent_span_id),
      inferredParent: stack.length ? stack[stack.length - 1] : null,
      attrs: attrsOf(ev.attrs),
    };
    if (e.type === 'span_start' && truthy(e.spanId)) stack.push(e.spanId);
    else if (e.type === 'span_end' && truthy(e.spanId)) {
      for (let i = stack.length - 1; i >= 0; i--) {
        if (stack[i] === e.spanId) {
          stack.splice(i, 1);
          break;
        }
      }
    }
    out.push(e);
  });
  return out;
}

interface SpanRec {
  state: 'closed_span' | 'open_span';
  name: CacheValue;
  startTs: number;
  endTs: number | null;
  displayEndTs: number | null;
  attempt: number;
  spanId: CacheValue;
  parentSpanId: CacheValue;
  startAttrs: CacheAttrs;
  endAttrs: CacheAttrs;
}

interface PointRec {
  type: 'event' | 'orphan_end';
  name: CacheValue;
  ts: number;
  attempt: number;
  spanId: CacheValue;
  parentSpanId: CacheValue;
  attrs: CacheAttrs;
}

function key(v: CacheValue): string {
  return typeof v === 'string' ? `s:${v}` : `j:${JSON.stringify(v instanceof PyFloat ? v.value : v)}`;
}

/** Python's `(a > b) - (a < b)` over the sort keys slime uses (numbers and names). */
function cmp(a: number | CacheValue, b: number | CacheValue): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  const sa = typeof a === 'string' ? a : String(a);
  const sb = typeof b === 'string' ? b : String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/**
 * `_build_items_from_trace` for one sample: its items, or null when it has no valid trace events. Without
 * `cacheCompat` (the Trace view's own layout) the legacy [P]/[D] virtual items and the 6-decimal
 * rounding, which only slime's cache needs, are skipped.
 */
export function buildTraceItems(trace: { [key: string]: SlimeValue }, cacheCompat = true): CacheItem[] | null {
  const round = cacheCompat ? round6 : (x: number): number => x;
  const events = normalizeTraceEvents(trace);
  if (events.length === 0) return null;
  const openStarts = new Map<string, SpanRec>();
  const closed: SpanRec[] = [];
  const points: PointRec[] = [];
  for (const e of events) {
    if (e.type === 'span_start' && truthy(e.spanId)) {
      openStarts.set(key(e.spanId), {
        state: 'closed_span',
        name: e.name,
        startTs: e.ts,
        endTs: null,
        displayEndTs: null,
        attempt: e.attempt,
        spanId: e.spanId,
        parentSpanId: truthy(e.parentSpanId) ? e.parentSpanId : e.inferredParent,
        startAttrs: e.attrs,
        endAttrs: {},
      });
    } else if (e.type === 'span_end') {
      const k = key(e.spanId);
      const start = openStarts.get(k);
      if (start) openStarts.delete(k);
      if (!start) {
        points.push({ type: 'orphan_end', name: e.name, ts: e.ts, attempt: e.attempt, spanId: e.spanId, parentSpanId: truthy(e.parentSpanId) ? e.parentSpanId : e.inferredParent, attrs: e.attrs });
      } else {
        start.endTs = e.ts;
        start.displayEndTs = e.ts;
        start.endAttrs = e.attrs;
        closed.push(start);
      }
    } else {
      points.push({ type: 'event', name: e.name, ts: e.ts, attempt: e.attempt, spanId: null, parentSpanId: truthy(e.parentSpanId) ? e.parentSpanId : e.inferredParent, attrs: e.attrs });
    }
  }
  const rowEnd = Math.max(...events.map((e) => e.ts));
  const spans = [...closed, ...openStarts.values()];
  const byId = new Map<string, SpanRec>();
  for (const s of spans) if (truthy(s.spanId)) byId.set(key(s.spanId), s);
  const depthMemo = new Map<SpanRec, number>();
  const depthOf = (s: SpanRec): number => {
    const known = depthMemo.get(s);
    if (known !== undefined) return known;
    // Walk up; a cycle gives 0 (as slime's recursion guard does).
    const chain: SpanRec[] = [];
    const seen = new Set<SpanRec>();
    let cur: SpanRec | undefined = s;
    let base = -1;
    let cyclic = false;
    while (cur) {
      const m = depthMemo.get(cur);
      if (m !== undefined) {
        base = m;
        break;
      }
      if (seen.has(cur)) {
        cyclic = true;
        break;
      }
      seen.add(cur);
      chain.push(cur);
      cur = cur.parentSpanId !== null && truthy(cur.parentSpanId) ? byId.get(key(cur.parentSpanId)) : undefined;
    }
    if (cyclic) {
      for (const c of chain) depthMemo.set(c, 0);
      return 0;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      base += 1;
      depthMemo.set(chain[i], base);
    }
    return depthMemo.get(s)!;
  };

  // Open spans: clipped at the first of row end, next sibling start, nearest ended ancestor's end.
  const siblings = new Map<string, SpanRec[]>();
  for (const s of spans) {
    const k = key(s.parentSpanId);
    let list = siblings.get(k);
    if (!list) siblings.set(k, (list = []));
    list.push(s);
  }
  for (const list of siblings.values()) {
    list.sort((a, b) => cmp(a.startTs, b.startTs) || cmp(a.endTs ?? Infinity, b.endTs ?? Infinity) || cmp(a.name, b.name));
  }
  for (const s of openStarts.values()) {
    const candidates: Array<[number, string]> = [[rowEnd, 'row_end']];
    const sib = (siblings.get(key(s.parentSpanId)) ?? []).find((o) => o.startTs > s.startTs);
    if (sib) candidates.push([sib.startTs, 'next_sibling_start']);
    let anc = truthy(s.parentSpanId) ? byId.get(key(s.parentSpanId)) : undefined;
    const visited = new Set<SpanRec>();
    while (anc && !visited.has(anc)) {
      visited.add(anc);
      if (anc.endTs !== null) {
        if (anc.endTs > s.startTs) candidates.push([anc.endTs, 'ancestor_end']);
        break;
      }
      anc = truthy(anc.parentSpanId) ? byId.get(key(anc.parentSpanId)) : undefined;
    }
    let best = candidates[0];
    for (const c of candidates) if (c[0] < best[0]) best = c;
    if (best[0] <= s.startTs) best = [s.startTs, 'self'];
    s.state = 'open_span';
    s.displayEndTs = best[0];
    s.endAttrs = { ...s.endAttrs, clipped_by: best[1] };
  }

  const parentName = (id: CacheValue): CacheValue => (truthy(id) ? (byId.get(key(id))?.name ?? null) : null);
  const items: CacheItem[] = [];
  // The virtual lanes' parent duration is taken from the unrounded times.
  const rawTimes = new Map<CacheItem, [number, number | null]>();
  for (const s of spans) {
    const depth = depthOf(s);
    const item: CacheSpanItem = {
      type: 'span',
      state: s.state,
      name: s.name,
      start_ts: round(s.startTs),
      end_ts: s.endTs === null ? null : round(s.endTs),
      display_end_ts: round(s.displayEndTs!),
      attempt: s.attempt,
      span_id: s.spanId,
      parent_span_id: s.parentSpanId,
      parent_span_name: parentName(s.parentSpanId),
      lane: depth,
      depth,
      attrs: { start_attrs: s.startAttrs, end_attrs: s.endAttrs },
    };
    rawTimes.set(item, [s.startTs, s.endTs]);
    items.push(item);
  }
  for (const p of points) {
    const parent = truthy(p.parentSpanId) ? byId.get(key(p.parentSpanId)) : undefined;
    const depth = parent ? depthOf(parent) + 1 : 0;
    items.push({
      type: p.type,
      state: p.type === 'event' ? 'point_event' : 'orphan_end',
      name: p.name,
      ts: round(p.ts),
      attempt: p.attempt,
      span_id: p.spanId,
      parent_span_id: p.parentSpanId,
      parent_span_name: parent ? parent.name : null,
      lane: depth,
      depth,
      attrs: p.attrs,
    });
  }

  // The legacy [P]/[D] virtual lanes: closed, non-synthetic spans whose end attrs hold pd_* durations.
  let nextLane = items.length ? Math.max(...items.map((i) => i.lane)) : -1;
  const virtual: CacheSpanItem[] = [];
  for (const it of cacheCompat ? items : []) {
    const raw = rawTimes.get(it);
    if (it.type !== 'span' || it.state !== 'closed_span' || !raw || raw[1] === null) continue;
    const parentDuration = round(raw[1] - raw[0]);
    if (typeof it.name === 'string' && it.name.startsWith('sglang_pd_')) continue;
    for (const [role, letter, keys] of PD_LANE_SPECS) {
      const roleAttrs: CacheAttrs = {};
      for (const k of keys) {
        if (!(k in it.attrs.end_attrs)) continue;
        const v = it.attrs.end_attrs[k];
        const n = v === true ? 1 : v === false ? 0 : pyNumber(v as SlimeValue);
        if (n !== undefined && n > 0) roleAttrs[k] = v;
      }
      if (Object.keys(roleAttrs).length === 0) continue;
      nextLane += 1;
      virtual.push({
        type: 'span',
        state: 'closed_span',
        name: `${pyStr(it.name)} [${letter}]`,
        start_ts: it.start_ts,
        end_ts: it.end_ts,
        display_end_ts: it.display_end_ts,
        attempt: it.attempt,
        span_id: `${truthy(it.span_id) ? pyStr(it.span_id) : pyStr(it.name)}:pd:${role}`,
        parent_span_id: it.span_id,
        parent_span_name: it.name,
        lane: nextLane,
        depth: nextLane,
        attrs: {
          start_attrs: {},
          end_attrs: { ...roleAttrs, timeline_pd_virtual_role: role, timeline_pd_parent_name: it.name, timeline_pd_parent_duration: floatOf(parentDuration) },
        },
      });
    }
  }
  items.push(...virtual);
  const at = (i: CacheItem): number => (i.type === 'span' ? i.start_ts : i.ts);
  const endAt = (i: CacheItem): number => (i.type === 'span' ? i.display_end_ts : i.ts);
  items.sort((a, b) => a.lane - b.lane || cmp(at(a), at(b)) || cmp(endAt(a), endAt(b)) || cmp(a.name, b.name));
  return items;
}

function pyStr(v: CacheValue): string {
  if (typeof v === 'string') return v;
  if (v === null) return 'None';
  if (v instanceof PyFloat) return pyRepr(v.value);
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : pyRepr(v);
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return JSON.stringify(v);
}

/** A float value: integral ones boxed so the writer prints `2.0`. */
function floatOf(x: number): number | PyFloat {
  return Number.isInteger(x) ? new PyFloat(x) : x;
}

/** `_compact_text(value, limit)`: str() of the value, cut at `limit` code points. */
export function compactText(v: SlimeValue | undefined, limit: number): string | null {
  if (v === undefined || v === null) return null;
  const text = typeof v === 'string' ? v : pyStr(jsonSafe(v));
  const cps = Array.from(text);
  return cps.length > limit ? `${cps.slice(0, limit).join('')}...<truncated:${cps.length}>` : text;
}

/** `_infer_source`: the sample's source, else metadata source / source_name / any key naming a source. */
function inferSource(fields: { [key: string]: SlimeValue }): SlimeValue | undefined {
  const present = (v: SlimeValue | undefined): boolean => v !== undefined && v !== null && v !== '';
  if (present(fields.source)) return fields.source;
  const meta = fields.metadata;
  if (!isRecord(meta)) return undefined;
  if (present(meta.source)) return meta.source;
  if (present(meta.source_name)) return meta.source_name;
  for (const [k, v] of Object.entries(meta)) if (k.toLowerCase().includes('source') && present(v)) return v;
  return undefined;
}

/** One viewer row for a dumped sample, or null when the sample has no trace (slime skips it). */
export function timelineRow(sample: SlimeSample): TimelineRow | null {
  const trace = sampleTrace(sample);
  if (!trace) return null;
  const items = buildTraceItems(trace);
  if (!items) return null;
  const f = sample.fields;
  const starts = items.map((i) => (i.type === 'span' ? i.start_ts : i.ts));
  const ends = items.map((i) => (i.type === 'span' ? i.display_end_ts : i.ts));
  const start = Math.min(...starts);
  const end = Math.max(...ends);
  const lengths: number[] = [];
  for (const it of items) {
    const bags = it.type === 'span' ? [it.attrs.start_attrs, it.attrs.end_attrs] : [it.attrs];
    for (const b of bags) {
      const n = pyNumber(b.response_length as SlimeValue);
      if (n !== undefined) lengths.push(n);
    }
  }
  const diff = end - start;
  return {
    row_id: sample.row,
    sample_index: 'index' in f ? jsonSafe(f.index) : sample.row,
    group_index: jsonSafe(f.group_index),
    source: compactText(inferSource(f), 64),
    status: compactText(f.status, 64),
    label: compactText(f.label, 256),
    reward: jsonSafe(f.reward),
    trace_id: jsonSafe(trace.trace_id),
    attempt: truthy(jsonSafe(trace.attempt)) ? pyInt(trace.attempt) : 0,
    start: round6(start),
    end: round6(end),
    // `max(0, end - start)` keeps the int 0 when the difference is not positive.
    duration: diff > 0 ? floatOf(round6(diff)) : 0,
    lane_count: 1 + Math.max(...items.map((i) => i.lane)),
    item_count: items.length,
    closed_span_count: items.filter((i) => i.state === 'closed_span').length,
    open_span_count: items.filter((i) => i.state === 'open_span').length,
    point_event_count: items.filter((i) => i.state === 'point_event').length,
    orphan_count: items.filter((i) => i.state === 'orphan_end').length,
    total_response_length: lengths.reduce((a, b) => a + b, 0),
    max_response_length: lengths.length ? Math.max(...lengths) : 0,
    items,
  };
}

/** The whole cache for one dump (`_build_cache_data`). */
export function timelineCache(samples: readonly SlimeSample[], ptPath: string, generatedAt: number): TimelineCache {
  const rows: TimelineRow[] = [];
  for (const s of samples) {
    const r = timelineRow(s);
    if (r) rows.push(r);
  }
  return {
    cache_version: TIMELINE_CACHE_VERSION,
    pt_path: ptPath,
    generated_at: generatedAt,
    sample_count: rows.length,
    global_start: rows.length ? round6(Math.min(...rows.map((r) => r.start))) : null,
    global_end: rows.length ? round6(Math.max(...rows.map((r) => r.end))) : null,
    rows,
  };
}

/**
 * The cache as slime writes it (`json.dump(..., ensure_ascii=True, separators=(",", ":"))`), except that
 * NaN and ±Infinity, which make slime's own viewer fail to boot, are written as null.
 */
export function timelineCacheJson(cache: TimelineCache): string {
  const parts: string[] = [];
  const walk = (v: unknown): void => {
    if (v === null || v === undefined) parts.push('null');
    else if (v instanceof PyFloat) parts.push(pyJsonFloat(v.value));
    else if (typeof v === 'number') parts.push(Number.isInteger(v) ? String(v) : pyJsonFloat(v));
    else if (typeof v === 'boolean') parts.push(v ? 'true' : 'false');
    else if (typeof v === 'string') parts.push(pyString(v));
    else if (Array.isArray(v)) {
      parts.push('[');
      v.forEach((x, i) => {
        if (i) parts.push(',');
        walk(x);
      });
      parts.push(']');
    } else {
      parts.push('{');
      let first = true;
      for (const [k, x] of Object.entries(v as object)) {
        if (!first) parts.push(',');
        first = false;
        parts.push(pyString(k), ':');
        walk(x);
      }
      parts.push('}');
    }
  };
  // Every time stamp is a Python float: an integral one is written `1767225600.0`.
  const t = (x: number | null): number | PyFloat | null => (x === null ? null : floatOf(x));
  walk({
    ...cache,
    generated_at: t(cache.generated_at),
    global_start: t(cache.global_start),
    global_end: t(cache.global_end),
    rows: cache.rows.map((r) => ({
      ...r,
      start: t(r.start),
      end: t(r.end),
      items: r.items.map((i) =>
        i.type === 'span' ? { ...i, start_ts: t(i.start_ts), end_ts: t(i.end_ts), display_end_ts: t(i.display_end_ts) } : { ...i, ts: t(i.ts) },
      ),
    })),
  });
  return parts.join('');
}

function pyJsonFloat(x: number): string {
  return Number.isFinite(x) ? pyRepr(x) : 'null';
}
