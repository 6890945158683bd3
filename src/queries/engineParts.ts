// Engine series parts: rows of one metric split per (addr, labels), DP ranks folded, and derived rates/means.
import { compareNodes } from '../run/model.ts';
import { pyJsonDumps } from './heatmapFrame.ts';

/** Rate metrics derived from a cumulative counter: Δvalue/Δt. */
export const ENGINE_RATE_METRICS: Readonly<Record<string, string>> = {
  sglang_prompt_tokens_per_s: 'sglang_prompt_tokens_total',
  sglang_generation_tokens_per_s: 'sglang_generation_tokens_total',
  sglang_requests_per_s: 'sglang_num_requests_total',
  sglang_aborted_requests_per_s: 'sglang_num_aborted_requests_total',
};

/** Mean metrics derived from a histogram's `_sum` and `_count`: Δsum/Δcount. */
export const ENGINE_MEAN_METRICS: Readonly<Record<string, string>> = {
  sglang_ttft_mean_s: 'sglang_time_to_first_token_seconds',
  sglang_inter_token_latency_mean_s: 'sglang_inter_token_latency_seconds',
  sglang_time_per_output_token_mean_s: 'sglang_time_per_output_token_seconds',
  sglang_e2e_latency_mean_s: 'sglang_e2e_request_latency_seconds',
};

/** Intensive gauges: DP ranks of one engine average; everything else adds up. */
export const ENGINE_MEAN_AGGREGATED_METRICS: ReadonlySet<string> = new Set([
  'sglang_token_usage',
  'sglang_cache_hit_rate',
  'sglang_kv_transfer_latency_ms',
]);

/** One served series: a time-sorted column pair for one `(addr, labels)`. */
export interface EnginePart {
  addr: string;
  /** Sort key and identity: folded labels as Python `json.dumps(sort_keys=True)`, or the raw labels JSON. */
  labelsJson: string;
  labels: Record<string, string>;
  ts: Float64Array;
  value: Float64Array;
}

/** Identity of one raw series as the store interns it. */
export interface EngineSeriesIdentity {
  addr: string;
  /** Labels JSON in file key order, e.g. `{"engine_type":"unified","dp_rank":"1"}` or `{}`. */
  labelsJson: string;
}

/** Rows of one metric: parallel columns, `series` indexing the identities handed alongside. */
export interface EngineRows {
  ts: ArrayLike<number>;
  series: ArrayLike<number>;
  value: ArrayLike<number>;
  length: number;
}

export type DpFold = 'none' | 'sum' | 'mean';

/** How raw rows of `metric` fold: per rank kept, or ranks summed/averaged per scrape tick. */
export function dpFoldFor(metric: string, perDpRank: boolean): DpFold {
  if (perDpRank) return 'none';
  return ENGINE_MEAN_AGGREGATED_METRICS.has(metric) ? 'mean' : 'sum';
}

export function parseLabels(json: string): Record<string, unknown> {
  try {
    const v = JSON.parse(json);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** Served labels: string values only (nulls dropped). */
function servedLabels(labels: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) if (v !== null && v !== undefined) out[k] = String(v);
  return out;
}

/** The folded identity of a labels JSON: `dp_rank` and nulls dropped, keys sorted, Python-encoded. */
export function foldedLabelsJson(labelsJson: string): string {
  const labels = parseLabels(labelsJson);
  const kept: Record<string, unknown> = {};
  for (const k of Object.keys(labels).sort()) {
    if (k !== 'dp_rank' && labels[k] !== null && labels[k] !== undefined) kept[k] = labels[k];
  }
  return pyJsonDumps(kept);
}

/** Engines in lane order (addresses by their numbers: `10.0.0.2` before `10.0.0.10`), then their labels. */
function compareKeys(a: EngineSeriesIdentity, b: EngineSeriesIdentity): number {
  if (a.addr !== b.addr) return compareNodes(a.addr, b.addr);
  if (a.labelsJson !== b.labelsJson) return a.labelsJson < b.labelsJson ? -1 : 1;
  return 0;
}

/**
 * Splits `rows` into parts per `(addr, labels)` sorted by that key, each sorted by ts.
 * With a fold, `dp_rank` leaves the identity and rows of one exact ts combine (sum or mean).
 * `identities[s]` describes series id `s` of `rows.series`.
 */
export function buildEngineParts(rows: EngineRows, identities: readonly EngineSeriesIdentity[], fold: DpFold): EnginePart[] {
  // Series id -> part slot, through the (possibly folded) identity.
  const slotOfSeries = new Int32Array(identities.length).fill(-1);
  const slotByKey = new Map<string, number>();
  const slotKeys: EngineSeriesIdentity[] = [];
  const rts = rows.ts;
  const rseries = rows.series;
  const rvalue = rows.value;
  const nRows = rows.length;
  const seen = new Uint8Array(identities.length);
  for (let i = 0; i < nRows; i++) seen[rseries[i]] = 1;
  for (let s = 0; s < identities.length; s++) {
    if (!seen[s]) continue;
    const id = identities[s];
    const labelsJson = fold === 'none' ? id.labelsJson : foldedLabelsJson(id.labelsJson);
    const key = `${id.addr}\u0000${labelsJson}`;
    let slot = slotByKey.get(key);
    if (slot === undefined) {
      slot = slotKeys.length;
      slotKeys.push({ addr: id.addr, labelsJson });
      slotByKey.set(key, slot);
    }
    slotOfSeries[s] = slot;
  }
  // Counting sort by slot, scattering ts/value into contiguous per-slot runs (file order within a slot):
  // per-slot work then reads memory sequentially instead of hopping across the whole window.
  const nSlots = slotKeys.length;
  const counts = new Int32Array(nSlots + 1);
  for (let i = 0; i < nRows; i++) counts[slotOfSeries[rseries[i]] + 1]++;
  for (let s = 0; s < nSlots; s++) counts[s + 1] += counts[s];
  const byTs = new Float64Array(nRows);
  const byValue = new Float64Array(nRows);
  const fill = counts.slice(0, nSlots);
  for (let i = 0; i < nRows; i++) {
    const at = fill[slotOfSeries[rseries[i]]]++;
    byTs[at] = rts[i];
    byValue[at] = rvalue[i];
  }

  const slots = Array.from({ length: nSlots }, (_, s) => s).sort((a, b) => compareKeys(slotKeys[a], slotKeys[b]));
  const parts: EnginePart[] = [];
  for (const s of slots) {
    const lo = counts[s];
    const n = counts[s + 1] - lo;
    let pts = byTs.subarray(lo, lo + n);
    let pvalue = byValue.subarray(lo, lo + n);
    let sorted = true;
    for (let k = 1; k < n; k++) {
      if (pts[k] < pts[k - 1]) {
        sorted = false;
        break;
      }
    }
    if (!sorted) {
      // Stable by ts: file order breaks ties.
      const order = Array.from({ length: n }, (_, k) => k).sort((a, b) => pts[a] - pts[b] || a - b);
      pts = Float64Array.from(order, (k) => pts[k]);
      pvalue = Float64Array.from(order, (k) => pvalue[k]);
    }
    let ts: Float64Array;
    let value: Float64Array;
    if (fold === 'none') {
      ts = pts.slice();
      value = pvalue.slice();
    } else {
      ts = new Float64Array(n);
      value = new Float64Array(n);
      let m = 0;
      let k = 0;
      while (k < n) {
        const t = pts[k];
        let sum = pvalue[k];
        let cnt = 1;
        k++;
        while (k < n && pts[k] === t) {
          sum += pvalue[k];
          cnt++;
          k++;
        }
        ts[m] = t;
        value[m] = fold === 'mean' ? sum / cnt : sum;
        m++;
      }
      if (m < n) {
        ts = ts.slice(0, m);
        value = value.slice(0, m);
      }
    }
    const key = slotKeys[s];
    parts.push({
      addr: key.addr,
      labelsJson: key.labelsJson,
      labels: servedLabels(parseLabels(key.labelsJson)),
      ts,
      value,
    });
  }
  return parts;
}

/** Δvalue/Δt at the later ts, where the counter did not go down and time moved; parts left empty are dropped. */
export function rateParts(counters: readonly EnginePart[]): EnginePart[] {
  const out: EnginePart[] = [];
  for (const p of counters) {
    const n = p.ts.length;
    if (n < 2) continue;
    const ts = new Float64Array(n - 1);
    const value = new Float64Array(n - 1);
    let m = 0;
    for (let i = 0; i + 1 < n; i++) {
      const d = p.value[i + 1] - p.value[i];
      const dt = p.ts[i + 1] - p.ts[i];
      if (d >= 0 && dt > 0) {
        ts[m] = p.ts[i + 1];
        value[m] = d / dt;
        m++;
      }
    }
    if (m > 0) out.push({ ...p, ts: ts.slice(0, m), value: value.slice(0, m) });
  }
  return out;
}

/**
 * Δsum/Δcount over ts present in both the `_sum` and `_count` parts of one identity, at the later ts;
 * a counter reset (Δsum < 0) or an idle interval (Δcount <= 0) is a gap, never a value.
 */
export function meanParts(sums: readonly EnginePart[], counts: readonly EnginePart[]): EnginePart[] {
  const den = new Map<string, EnginePart>();
  for (const p of counts) den.set(`${p.addr}\u0000${p.labelsJson}`, p);
  const out: EnginePart[] = [];
  for (const num of sums) {
    const d = den.get(`${num.addr}\u0000${num.labelsJson}`);
    if (d === undefined) continue;
    // Merge-join the two ts-sorted parts on equal ts, first occurrence of a repeated ts (np.intersect1d).
    const nts = num.ts;
    const dts = d.ts;
    const common = new Float64Array(Math.min(nts.length, dts.length));
    const numAt = new Int32Array(common.length);
    const denAt = new Int32Array(common.length);
    let c = 0;
    for (let i = 0, j = 0; i < nts.length && j < dts.length; ) {
      if (nts[i] < dts[j]) i++;
      else if (nts[i] > dts[j]) j++;
      else {
        const t = nts[i];
        common[c] = t;
        numAt[c] = i;
        denAt[c] = j;
        c++;
        i++;
        j++;
        while (i < nts.length && nts[i] === t) i++;
        while (j < dts.length && dts[j] === t) j++;
      }
    }
    if (c < 2) continue;
    const ts = new Float64Array(c - 1);
    const value = new Float64Array(c - 1);
    let m = 0;
    for (let k = 0; k + 1 < c; k++) {
      const ds = num.value[numAt[k + 1]] - num.value[numAt[k]];
      const dc = d.value[denAt[k + 1]] - d.value[denAt[k]];
      if (ds >= 0 && dc > 0) {
        ts[m] = common[k + 1];
        value[m] = ds / dc;
        m++;
      }
    }
    if (m > 0) out.push({ ...num, ts: ts.slice(0, m), value: value.slice(0, m) });
  }
  return out;
}
