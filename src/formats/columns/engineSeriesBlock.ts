// One hour of `engine_series` samples as columns (ts, series id, value), and its line parser.
import type { EngineSeriesTable } from './interning.ts';
import { ByteSliceMap } from './interning.ts';
import type { BadLine } from './lineScan.ts';
import { tsHorizon, tsProblem } from './valueDomain.ts';
import { type BlockColumns, ColumnBlock } from './columnBlock.ts';
import { bytesOf, cursor, decodeLine, hasExactKeys, isNum, lineEnd, matchBytes, parsePythonJson, scanNumber, scanNumberAfter, scanPlainString, UNDECODED, utf8Slice } from './lineScan.ts';

const ENGINE_KEYS = ['ts', 'addr', 'metric', 'labels', 'value'] as const;

const ENGINE_SCHEMA = { ts: Float64Array, series: Uint32Array, value: Float64Array } as const;

/** An engine_series block's columns, as handed between threads. */
export type EngineSeriesColumns = BlockColumns<typeof ENGINE_SCHEMA>;

/**
 * Rows of one `engine_series` partition file in file order: `ts`, `series` (store-wide series ids —
 * `store.engineSeries.key(id)` gives `{addr, metric, labelsJson, addrId, metricId, labelsId}`), `value`.
 * 20 bytes a row.
 */
export class EngineSeriesBlock extends ColumnBlock<typeof ENGINE_SCHEMA> {
  readonly stream = 'engine_series' as const;

  constructor(key: string, lo: number, hi: number, capacity = 1024) {
    super(ENGINE_SCHEMA, key, lo, hi, capacity);
  }

  get ts(): Float64Array {
    return this.live('ts');
  }

  /** Store-wide engine series id per row. */
  get series(): Uint32Array {
    return this.live('series');
  }

  get value(): Float64Array {
    return this.live('value');
  }

  /** A block over columns parsed elsewhere; `seriesMap[localSeries]` gives this store's series id. */
  static adopt(key: string, lo: number, hi: number, c: EngineSeriesColumns, seriesMap: ArrayLike<number>): EngineSeriesBlock {
    const b = new EngineSeriesBlock(key, lo, hi, 16);
    const series = c.cols.series;
    for (let i = 0; i < c.length; i++) series[i] = seriesMap[series[i]];
    b.adoptColumns(ENGINE_SCHEMA, c);
    return b;
  }

  push(ts: number, series: number, value: number): void {
    const n = this.length;
    if (n === this.cap) this.reserve(1);
    const c = this.cols;
    c.ts[n] = ts;
    c.series[n] = series;
    c.value[n] = value;
    this.length = n + 1;
    this.noteTs(ts);
  }
}

const L_TS = bytesOf('{"ts":');
const L_ADDR = bytesOf(',"addr":"');
const L_METRIC = bytesOf(',"metric":"');
const L_LABELS = bytesOf(',"labels":{');
const L_VALUE = bytesOf(',"value":');
const MARK_METRIC = Buffer.from('","metric":"');

/**
 * Labels as the store keeps them: compact JSON in file key order, nulls dropped, values as strings
 * (a number or boolean a non-Python writer may put there is kept as its text, not dropped).
 */
function labelsJsonOf(labels: unknown): string | null {
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels)) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    if (v === null) continue;
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else return null;
  }
  return JSON.stringify(out);
}

/** Parses `engine_series` lines; the `(addr, metric, labels)` bytes of a line map straight to a series id. */
export class EngineSeriesParser {
  private readonly identities = new ByteSliceMap();
  /** Identity bytes (addr … labels) of each series id seen by this parser. */
  private readonly identityBytes: Uint8Array[] = [];
  /** Last observed successor series of each series id (-1 = none). */
  private successor = new Int32Array(64).fill(-1);
  readonly table: EngineSeriesTable;

  constructor(table: EngineSeriesTable) {
    this.table = table;
  }

  parse(buf: Uint8Array, start: number, end: number, block: EngineSeriesBlock, firstLine: number, bad: BadLine): number {
    const horizon = tsHorizon();
    let line = firstLine;
    const next = this.successor;
    let prev = -1;
    for (let p = start; p < end; line++) {
      fast: {
        const ts = scanNumberAfter(buf, p, L_TS, end);
        if (ts !== ts) break fast;
        let i = cursor.pos;
        if (!matchBytes(buf, i, L_ADDR)) break fast;
        const idStart = i + 9;
        const addrEnd = scanPlainString(buf, idStart, end);
        if (addrEnd < 0) break fast;
        i = addrEnd + 1;
        if (!matchBytes(buf, i, L_METRIC)) break fast;
        const metricStart = i + 11;
        const metricEnd = scanPlainString(buf, metricStart, end);
        if (metricEnd < 0) break fast;
        i = metricEnd + 1;
        if (!matchBytes(buf, i, L_LABELS)) break fast;
        const labelsStart = i + 10;
        i = labelsStart + 1;
        while (i < end) {
          const c = buf[i];
          if (c === 125) break;
          if (c === 123 || c === 92 || c === 91 || c === 10) break fast;
          i++;
        }
        if (i >= end) break fast;
        const idEnd = i + 1;
        const value = scanNumberAfter(buf, idEnd, L_VALUE, end);
        if (value !== value) break fast;
        i = cursor.pos;
        if (buf[i] !== 125 || buf[i + 1] !== 10 || i + 1 >= end) break fast;
        // rows repeat in the same series order every scrape tick: try the last successor first
        let sid = prev >= 0 && prev < next.length ? next[prev] : -1;
        if (sid >= 0) {
          const want = this.identityBytes[sid];
          const n = idEnd - idStart;
          if (want.length !== n) sid = -1;
          else {
            for (let k = 0; k < n; k++) {
              if (want[k] !== buf[idStart + k]) {
                sid = -1;
                break;
              }
            }
          }
        }
        if (sid < 0) {
          sid = this.identities.find(buf, idStart, idEnd);
          if (sid < 0) {
            let labels: unknown;
            try {
              labels = JSON.parse(utf8Slice(buf, labelsStart, idEnd));
            } catch {
              break fast;
            }
            const lj = labelsJsonOf(labels);
            if (lj === null) break fast;
            sid = this.table.id(utf8Slice(buf, idStart, addrEnd), utf8Slice(buf, metricStart, metricEnd), lj);
            this.identities.add(buf, idStart, idEnd, sid);
          }
          if (this.identityBytes[sid] === undefined) this.identityBytes[sid] = Uint8Array.prototype.slice.call(buf, idStart, idEnd) as Uint8Array;
          if (prev >= 0) this.setSuccessor(prev, sid);
        }
        const why = tsProblem(ts, horizon);
        if (why !== null) bad(line, why);
        else block.push(ts, sid, value);
        prev = sid;
        p = i + 2;
        continue;
      }
      const nl = lineEnd(buf, p, end);
      this.slowLine(buf, p, nl, block, line, bad);
      prev = -1;
      p = nl + 1;
    }
    return line - firstLine;
  }

  private readonly viewPatterns = new Map<string, ViewSearch[] | null>();

  /**
   * Parses only the lines of the metrics named in `view` (newline-separated), found by their compact
   * byte form `,"metric":"<name>","labels":`. -1 when the chunk is not in the writer's compact form
   * or a name needs escaping (the caller then parses every line); lines are not counted (0).
   */
  parseView(view: string, buf: Uint8Array, start: number, end: number, block: EngineSeriesBlock): number {
    let searches = this.viewPatterns.get(view);
    if (searches === undefined) {
      const names = view === '' ? [] : view.split('\n');
      searches = names.some((n) => JSON.stringify(n) !== `"${n}"`) ? null : viewSearches(names.map((n) => Buffer.from(`,"metric":"${n}","labels":`)));
      this.viewPatterns.set(view, searches);
    }
    if (searches === null) return -1;
    const b = buf as Buffer;
    const firstNl = b.indexOf(10, start);
    if (!matchBytes(buf, start, L_TS) || b.indexOf(MARK_METRIC, start) > firstNl) return -1;
    const at = searches.map((s) => b.indexOf(s.needle, start));
    const none = (): void => undefined;
    for (;;) {
      let k = -1;
      for (let j = 0; j < at.length; j++) if (at[j] >= 0 && at[j] < end && (k < 0 || at[j] < at[k])) k = j;
      if (k < 0) break;
      const pos = at[k];
      const { needle, members } = searches[k];
      if (!members.some((m) => matchBytes(buf, pos, m))) {
        at[k] = b.indexOf(needle, pos + 1);
        continue;
      }
      // line bounds by a short byte walk (a native search per line costs more than ~150 bytes of loop)
      let ls = pos;
      while (ls > start && buf[ls - 1] !== 10) ls--;
      let le = pos;
      while (le < end - 1 && buf[le] !== 10) le++;
      this.parse(buf, ls, le + 1, block, 0, none);
      at[k] = b.indexOf(needle, le + 1);
    }
    return 0;
  }

  private setSuccessor(prev: number, sid: number): void {
    if (prev >= this.successor.length) {
      const grown = new Int32Array(Math.max(64, prev * 2 + 2)).fill(-1);
      grown.set(this.successor);
      this.successor = grown;
    }
    this.successor[prev] = sid;
  }

  private slowLine(buf: Uint8Array, s: number, e: number, block: EngineSeriesBlock, line: number, bad: BadLine): void {
    const o = decodeLine(buf, s, e, line, bad, parsePythonJson);
    if (o === UNDECODED) return;
    if (!hasExactKeys(o, ENGINE_KEYS)) {
      bad(line, `engine_series record must have exactly the keys ${ENGINE_KEYS.join(', ')}`);
      return;
    }
    const lj = labelsJsonOf(o.labels);
    if (!isNum(o.ts) || typeof o.addr !== 'string' || typeof o.metric !== 'string' || lj === null || typeof o.value !== 'number') {
      bad(line, 'engine_series record has a value of the wrong type');
      return;
    }
    const why = tsProblem(o.ts, tsHorizon());
    if (why !== null) {
      bad(line, why);
      return;
    }
    block.push(o.ts, this.table.id(o.addr, o.metric, lj), o.value);
  }
}

/** One byte search of a selective read: `needle` is the shared prefix of the `members` it finds. */
interface ViewSearch {
  needle: Buffer;
  members: Buffer[];
}

// `,"metric":"` plus 17 name bytes: one scan finds `_sum`/`_count` twins, while a short shared prefix
// (`sglang_`) would stop on nearly every line.
const SHARED_NEEDLE_BYTES = 28;

/** Groups the metric patterns that share a long prefix into one search each. */
function viewSearches(patterns: Buffer[]): ViewSearch[] {
  const out: ViewSearch[] = [];
  for (const p of [...patterns].sort(Buffer.compare)) {
    const last = out.at(-1);
    if (last !== undefined) {
      let n = 0;
      while (n < last.needle.length && n < p.length && last.needle[n] === p[n]) n++;
      if (n >= SHARED_NEEDLE_BYTES) {
        last.needle = last.needle.subarray(0, n);
        last.members.push(p);
        continue;
      }
    }
    out.push({ needle: p, members: [p] });
  }
  return out;
}
