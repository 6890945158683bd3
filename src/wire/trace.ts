// The Trace view's answers: per-sample request traces laid out in lanes (`/api/rlsight/trace`), and one
// sample's items with every attr (`/api/rlsight/trace/details`).

/** `span` closed, `open` never ended (drawn clipped), `point` an event, `orphan` an end without a start, `pd` a prefill/decode segment. */
export type TraceItemKind = 'span' | 'open' | 'point' | 'orphan' | 'pd';

export interface TraceItem {
  kind: TraceItemKind;
  name: string;
  /** Seconds since the answer's `t0`. */
  start: number;
  /** For spans the drawn end (open spans: clipped); for points equal to `start`. */
  end: number;
  lane: number;
  attempt: number;
  /** Index into the sample's details (`TraceDetails.items`). */
  id: number;
  /** Open spans: why the drawn end is where it is (row_end, next_sibling_start, ancestor_end, self). */
  clipped_by?: string;
  /** PD segments: the instance role. */
  role?: 'P' | 'D';
  /** PD segments: a segment whose interval lies inside another of the same lane (drawn thinner, over it). */
  inner?: boolean;
  /** Point events and orphans whose parent span is not in the trace. */
  orphan_parent?: boolean;
  /** Its scalar attrs as `key=value` words (each value cut at 80 characters), for search: absent without any. */
  attr_text?: string;
}

export interface TraceRow {
  /** Position in the dump's samples list. */
  row: number;
  sample_index: number | null;
  group_index: number | null;
  status: string | null;
  reward: number | null;
  source: string | null;
  label: string | null;
  trace_id: string | null;
  /** Highest attempt number in the trace. */
  attempts: number;
  start: number;
  end: number;
  /** One label per lane: '' for span lanes, '[P]' / '[D]' for the prefill / decode lanes. */
  lanes: string[];
  items: TraceItem[];
  /** SGLang request ids of the sample's requests (searchable). */
  request_ids: string[];
  open_spans: number;
  orphans: number;
}

export interface TraceAnswer {
  /** Always true: a run that holds no per-request traces at all (a miles run) answers a 404 instead. */
  has_traces: true;
  rollout_id: number;
  evaluation: boolean;
  /** Absolute epoch seconds every `start` / `end` is relative to (the earliest event). */
  t0: number;
  rows: TraceRow[];
  /** Samples of the dump without a trace (not drawn). */
  untraced: number;
  /** Distinct item names, most frequent first (legend, name filter). */
  names: string[];
  notes: string[];
}

export interface TraceItemDetails {
  kind: TraceItemKind;
  name: string;
  /** Absolute epoch seconds. */
  start: number;
  end: number | null;
  attempt: number;
  span_id: string | null;
  parent_span_id: string | null;
  parent_name: string | null;
  clipped_by?: string;
  /** A recorded `sglang_pd_*` span drawn as [P]/[D] segments instead of as a span: says so (slime's stacked PD layout). */
  note?: string;
  /** PD segments built from a recorded `sglang_pd_*` span: that span's index in `TraceDetails.items`. */
  recorded?: number;
  /** Spans: start and end attrs; points: the event attrs; PD segments: the duration and where it came from. */
  attrs: Record<string, unknown>;
}

export interface TraceDetails {
  row: number;
  sample_index: number | null;
  trace_id: string | null;
  items: TraceItemDetails[];
}
