// What the advisory rules need of a whole-run engine gauge, folded one hour at a time: per served
// series (dp ranks folded as the engine_series answer folds them) the point count, the exact sum, the
// maximum and the time extent. Memory holds one hour's rows, not the run's points; the sums are exactly
// rounded, so they do not depend on the hours the points were folded in.
import type { EngineSeriesBlock, EngineSeriesTable } from '../run/model.ts';
import { buildEngineParts, dpFoldFor } from './engineParts.ts';
import { identities, metricRowsOf, partsOf, type EngineSeriesSource } from './engineSeries.ts';
import { ExactSum } from './exactSum.ts';

/** One served engine series, summarised. */
export interface EngineSeriesSummary {
  addr: string;
  labels: Record<string, string>;
  /** Points, their exact sum (NaN when one is NaN) and maximum (-Infinity without a comparable point). */
  n: number;
  sum: ExactSum;
  max: number;
  /** Smallest and largest point time (±Infinity without points). */
  tsMin: number;
  tsMax: number;
}

export interface EngineSummarySource extends EngineSeriesSource {
  engineSeriesPass(t0?: number | null, t1?: number | null, metrics?: readonly string[]): Iterable<EngineSeriesBlock>;
}

interface Acc extends EngineSeriesSummary {
  labelsJson: string;
}

function emptyAcc(addr: string, labelsJson: string, labels: Record<string, string>): Acc {
  return { addr, labelsJson, labels, n: 0, sum: new ExactSum(), max: -Infinity, tsMin: Infinity, tsMax: -Infinity };
}

function foldPoints(acc: Acc, ts: ArrayLike<number>, value: ArrayLike<number>): void {
  for (let i = 0; i < ts.length; i++) {
    const v = value[i];
    acc.sum.add(v);
    if (v > acc.max) acc.max = v;
    const t = ts[i];
    if (t < acc.tsMin) acc.tsMin = t;
    if (t > acc.tsMax) acc.tsMax = t;
  }
  acc.n += ts.length;
}

function ordered(accs: Iterable<Acc>): EngineSeriesSummary[] {
  const out = [...accs].sort((a, b) => (a.addr !== b.addr ? (a.addr < b.addr ? -1 : 1) : a.labelsJson < b.labelsJson ? -1 : a.labelsJson > b.labelsJson ? 1 : 0));
  return out.map(({ labelsJson: _, ...s }) => s);
}

/** Summaries of served series (whole point columns at hand), in their answer order. */
export function summarizeSeries(series: readonly { addr: string; labels: Record<string, string>; labelsJson?: string; ts: ArrayLike<number>; value: ArrayLike<number> }[]): EngineSeriesSummary[] {
  return series.map((s) => {
    const acc = emptyAcc(s.addr, s.labelsJson ?? '', s.labels);
    foldPoints(acc, s.ts, s.value);
    const { labelsJson: _, ...out } = acc;
    return out;
  });
}

/**
 * Summaries of the served series of raw gauge `metric` over `[t0, t1]`, folded hour by hour (`read`: the
 * metrics each hour is read for, so several gauges share one read of a cold hour). Equal to
 * summarising the whole window's series at once: a dp fold joins the rows of one scrape time, which one
 * hour holds, and the summaries do not depend on order. Where a series' points of two hours interleave
 * (a line filed under another hour), the window is read whole instead.
 */
export function engineSummaries(
  store: EngineSummarySource,
  metric: string,
  perDpRank: boolean,
  t0: number | null = null,
  t1: number | null = null,
  read: readonly string[] = [metric],
): EngineSeriesSummary[] {
  const table: EngineSeriesTable = store.engineSeries;
  const fold = dpFoldFor(metric, perDpRank);
  const accs = new Map<string, Acc>();
  for (const block of store.engineSeriesPass(t0, t1, read)) {
    const rows = metricRowsOf(table, [block], metric, t0, t1);
    if (rows.length === 0) continue;
    for (const part of buildEngineParts(rows, identities(table), fold)) {
      if (part.ts.length === 0) continue;
      const key = `${part.addr}\u0000${part.labelsJson}`;
      let acc = accs.get(key);
      if (acc === undefined) accs.set(key, (acc = emptyAcc(part.addr, part.labelsJson, part.labels)));
      else if (!(part.ts[0]! > acc.tsMax)) return wholeWindow(store, metric, perDpRank, t0, t1);
      foldPoints(acc, part.ts, part.value);
    }
  }
  return ordered(accs.values());
}

function wholeWindow(store: EngineSeriesSource, metric: string, perDpRank: boolean, t0: number | null, t1: number | null): EngineSeriesSummary[] {
  return summarizeSeries(partsOf(store, metric, perDpRank, t0, t1));
}
