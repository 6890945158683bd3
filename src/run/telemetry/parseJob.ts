// One cold partition parse, runnable on a worker thread: reads a file's complete lines from an offset
// with the stream's parser and hands back transferable columns plus the strings they refer to.
import { statSync } from 'node:fs';
import { TAIL_CHUNK_BYTES, readCompleteLines } from '../../formats/jsonlTail.ts';
import { ColumnBlock } from '../../formats/columns/columnBlock.ts';
import { EngineSeriesBlock, EngineSeriesParser } from '../../formats/columns/engineSeriesBlock.ts';
import { GpuUtilBlock, GpuUtilParser } from '../../formats/columns/gpuUtilBlock.ts';
import { EngineSeriesTable, LaneTable, StringTable } from '../../formats/columns/interning.ts';
import { PhaseBlock, PhaseParser } from '../../formats/columns/phaseBlock.ts';
import { PartitionCache } from './partitionCache.ts';
import { MAX_DEFER_MS, pauseWhileRequests } from '../foreground.ts';
import type { PartitionedStream } from './records.ts';
import { RecordBlock, gpuProcessOf, parseRecordLines, trajectoryEventOf } from '../../formats/columns/recordBlock.ts';
import type { ParsedColumns, ParseResult } from '../../formats/columns/parsedColumns.ts';
import type { TimeBounds } from '../../formats/columns/timeBounds.ts';

export interface ParseJob {
  stream: PartitionedStream;
  path: string;
  offset: number;
  /** Selective read (lane keys / metric names, newline-separated), or null for every line. */
  view: string | null;
  /** The stamps a selective gpu_util read must keep every row of (absent: all); lines outside them may be left out. */
  bounds?: TimeBounds;
  /** Where the read stops (a line start; absent: the file's end): one piece of a file several threads share. */
  end?: number;
  /** Expected rows, to size the columns. */
  rowsHint: number;
  /**
   * Persist the whole parse to this partition cache here, on the parsing thread, and hand back none of its
   * columns (a warm-up parse: nothing of it stays resident, so nothing needs to cross threads).
   */
  persist?: { cacheDir: string; dashboardDir: string; key: string; ino: number };
  /** How long a warm-up parse may pause for requests in all, ms (absent: MAX_DEFER_MS). */
  pauseBudgetMs?: number;
}

/** Interning tables of one parsing thread (ids local to it; the store maps them to its own). */
export class ParseContext {
  readonly lanes = new LaneTable();
  readonly engineSeries = new EngineSeriesTable();
  readonly strings = new StringTable();
  readonly gpu = new GpuUtilParser(this.lanes);
  readonly engine = new EngineSeriesParser(this.engineSeries);
  readonly phases = new PhaseParser(this.strings);
  /** The server's count of requests in flight (a Foreground's `inFlight`): a warm-up parse pauses between chunks while it is above 0. */
  requestsInFlight: Int32Array | null = null;
  /** Reads waiting for a thread of this thread's pool: a warm-up parse does not pause while it is above 0. */
  threadWanted: Int32Array | null = null;
  /** How long the last parse paused for requests, ms. */
  pausedMs = 0;
}

/** Rows reserved past the first chunk's rows-per-byte estimate (lines vary a little in length). */
const ROWS_SLACK = 1.03;

function statSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Runs one job; returns the result and the buffers to transfer. */
export function runParseJob(ctx: ParseContext, job: ParseJob): { result: ParseResult; transfer: ArrayBuffer[] } {
  const out = parse(ctx, job);
  const p = job.persist;
  if (p === undefined || out.result.view !== null) return out;
  // the columns are dropped once written: they may be reordered in place on the way
  new PartitionCache(p.cacheDir, p.dashboardDir).save(job.stream, p.key, p.ino, out.result, true);
  const { stream } = out.result.data;
  const data = { stream, rows: [], tsMin: Infinity, tsMax: -Infinity } as unknown as ParsedColumns;
  return { result: { ...out.result, data, persisted: true, ...(ctx.pausedMs > 0 ? { pausedMs: Math.round(ctx.pausedMs) } : {}) }, transfer: [] };
}

function parse(ctx: ParseContext, job: ParseJob): { result: ParseResult; transfer: ArrayBuffer[] } {
  const warnings: [number, string][] = [];
  const bad = (line: number, message: string): void => {
    warnings.push([line, message]);
  };
  let lines = 0;
  // a whole persisted parse is written and dropped here: its columns need no trimmed copy
  const trim = job.persist === undefined;
  // a warm-up parse gives the cores to requests being answered, pausing between its chunks, at most this long in
  // all (it holds what it has parsed meanwhile), and not while a read waits for a thread of its pool
  const pauses = job.persist !== undefined ? ctx.requestsInFlight : null;
  let pauseLeft = job.pauseBudgetMs ?? MAX_DEFER_MS;
  ctx.pausedMs = 0;
  /** Reads the job's lines into `block` through `each`, room for the whole read made once the first chunk shows its rows per byte. */
  const read = (block: { length: number; expectRows(rows: number): void }, each: (buf: Uint8Array, end: number) => number): number => {
    let first = true;
    return readCompleteLines(
      job.path,
      job.offset,
      (chunk) => {
        if (pauses !== null && pauseLeft > 0) {
          const ms = pauseWhileRequests(pauses, ctx.threadWanted, pauseLeft);
          pauseLeft -= ms;
          ctx.pausedMs += ms;
        }
        lines += each(chunk.buf, chunk.end);
        if (first && chunk.end > 0) {
          first = false;
          const bytes = Math.min(job.end ?? Infinity, statSize(job.path)) - job.offset;
          block.expectRows((block.length / chunk.end) * bytes * ROWS_SLACK + 16);
        }
      },
      TAIL_CHUNK_BYTES,
      job.end,
    ).offset;
  };

  if (job.stream === 'gpu_util') {
    const v = job.view;
    // a lane view keeps a few rows of many: its room is made from the first chunk's share
    const block = new GpuUtilBlock('', 0, 0, v === null ? job.rowsHint : 1024);
    const offset = read(block, (buf, end) => (v === null ? ctx.gpu.parse(buf, 0, end, block, lines + 1, bad) : ctx.gpu.parseView(v, buf, 0, end, block, lines + 1, bad, job.bounds)));
    const columns = block.columns(trim);
    const lanes: [string, number][] = [];
    for (let i = 0; i < ctx.lanes.size; i++) lanes.push([ctx.lanes.node(i), ctx.lanes.gpu(i)]);
    return { result: { data: { stream: 'gpu_util', columns, lanes }, offset, lines, view: v, warnings }, transfer: ColumnBlock.transferables(columns) };
  }
  if (job.stream === 'engine_series') {
    const pack = (block: EngineSeriesBlock, offset: number, view: string | null): { result: ParseResult; transfer: ArrayBuffer[] } => {
      const columns = block.columns(trim);
      const series = ctx.engineSeries.rows();
      return {
        result: { data: { stream: 'engine_series', columns, series }, offset, lines, view, warnings },
        transfer: ColumnBlock.transferables(columns),
      };
    };
    const v = job.view;
    if (v !== null) {
      const block = new EngineSeriesBlock('', 0, 0, 1024);
      let ok = true;
      const offset = read(block, (buf, end) => {
        if (ok && ctx.engine.parseView(v, buf, 0, end, block) < 0) ok = false;
        return 0;
      });
      if (ok) return pack(block, offset, v);
      // not in the compact form a selective read needs: read every line instead
    }
    const block = new EngineSeriesBlock('', 0, 0, job.rowsHint);
    lines = 0;
    const offset = read(block, (buf, end) => ctx.engine.parse(buf, 0, end, block, lines + 1, bad));
    return pack(block, offset, null);
  }
  if (job.stream === 'phases') {
    const block = new PhaseBlock('', 0, 0, ctx.strings, job.rowsHint);
    const offset = read(block, (buf, end) => ctx.phases.parse(buf, 0, end, block, lines + 1, bad));
    const columns = block.columns(trim);
    const strings: string[] = [];
    for (let i = 0; i < ctx.strings.size; i++) strings.push(ctx.strings.str(i));
    const transfer = PhaseBlock.transferablesOf(columns);
    return { result: { data: { stream: 'phases', columns, strings }, offset, lines, view: null, warnings }, transfer };
  }
  const block = new RecordBlock<{ ts: number }>('', 0, 0);
  const validate = job.stream === 'trajectories' ? trajectoryEventOf : gpuProcessOf;
  const offset = read({ length: 0, expectRows: () => {} }, (buf, end) => parseRecordLines(validate as (o: unknown) => { ts: number } | string, buf, 0, end, block, lines + 1, bad));
  const data = { stream: job.stream, rows: block.rows, tsMin: block.tsMin, tsMax: block.tsMax } as ParsedColumns;
  return { result: { data, offset, lines, view: null, warnings }, transfer: [] };
}
