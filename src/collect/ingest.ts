// One ingest batch: NDJSON lines of one stream, each validated by the layout's decoder and
// re-encoded exactly as miles writes it. A bad line is left out and reported; the others are kept.
import { decodeLine, encodeRecord, type GpuSample, type StreamName, type StreamRecord } from '../formats/dashboard/index.ts';
import { pyFloat } from '../formats/pythonJson.ts';

export interface IngestRecord<S extends StreamName = StreamName> {
  record: StreamRecord[S];
  /** The record's on-disk line (without newline). */
  line: string;
}

export interface IngestProblem {
  /** 1-based line of the batch. */
  line: number;
  field: string;
  message: string;
}

export interface IngestResult<S extends StreamName> {
  records: IngestRecord<S>[];
  /** The lines left out, in batch order. */
  problems: IngestProblem[];
}

/**
 * A gpu_util line already in the on-disk encoding: compact, keys in order, plain ASCII strings, ints.
 * The Python producers send exactly this; such a line is kept as it came once its `ts` is checked to
 * be the float repr Python prints, so a kept line equals the re-encoded one (a property test checks).
 */
const CANONICAL_GPU =
  /^\{"ts":(-?\d+\.\d+(?:e[+-]\d+)?|-?\d(?:\.\d+)?e[+-]\d+),"node":"([\x20\x21\x23-\x5b\x5d-\x7e]*)","gpu":(0|[1-9]\d{0,8}),"util":(-?(?:0|[1-9]\d{0,14})),"mem_mb":(-?(?:0|[1-9]\d{0,14})),"power_w":(-?(?:0|[1-9]\d{0,14}))\}$/;

function canonicalGpuLine(text: string): IngestRecord<'gpu_util'> | null {
  const m = CANONICAL_GPU.exec(text);
  if (m === null) return null;
  const ts = Number(m[1]);
  if (!Number.isFinite(ts) || pyFloat(ts) !== m[1]) return null;
  const record: GpuSample = { ts, node: m[2], gpu: Number(m[3]), util: Number(m[4]), mem_mb: Number(m[5]), power_w: Number(m[6]) };
  if (!Number.isSafeInteger(record.util) || !Number.isSafeInteger(record.mem_mb) || !Number.isSafeInteger(record.power_w)) return null;
  return { record, line: text };
}

/** Splits an NDJSON body into its lines (blank lines skipped, `\r\n` accepted) and checks each one. */
export function ingestBatch<S extends StreamName>(stream: S, body: string): IngestResult<S> {
  const out: IngestRecord<S>[] = [];
  const problems: IngestProblem[] = [];
  let start = 0;
  let lineNo = 0;
  const gpu = stream === 'gpu_util';
  while (start < body.length) {
    let nl = body.indexOf('\n', start);
    if (nl < 0) nl = body.length;
    lineNo++;
    let text = body.slice(start, nl);
    start = nl + 1;
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (gpu) {
      const quick = canonicalGpuLine(text);
      if (quick !== null) {
        out.push(quick as IngestRecord<S>);
        continue;
      }
    }
    if (text.trim() === '') continue;
    const d = decodeLine(stream, text);
    if (!d.ok) {
      problems.push({ line: lineNo, ...d.problem });
      continue;
    }
    out.push({ record: d.record, line: encodeRecord(stream, d.record, d.floatKeys) });
  }
  return { records: out, problems };
}
