// Rollout samples sent by producers (`POST /v1/streams/samples`): one NDJSON line per sample naming its
// step, its position and how many samples the call recorded. A step's lines are held until all of them
// are in, then written as one Parquet file (temporary name, rename); `{file}.pending` marks a step whose
// samples are still arriving, so a reader answers "still being written" instead of a partial step.
import { join } from 'node:path';
import { PENDING_SUFFIX, SAMPLES_DIR, sampleStepFile, type SampleFields } from '../formats/collectedSamples.ts';
import { encodeSampleStep } from '../formats/collectedSamplesWrite.ts';
import { parsePyJson, PyFloat, type PyJson } from '../formats/pythonJson.ts';
import type { IngestProblem } from './ingest.ts';

/** The stream name producers send samples under (not a dashboard stream: samples go to `samples/`). */
export const SAMPLES_STREAM = 'samples';

export interface SampleLine {
  rolloutId: number;
  evaluation: boolean;
  /** One recording call (a step recorded again replaces the earlier file once complete). */
  call: string;
  count: number;
  position: number;
  sample: SampleFields;
}

/** Where the step files go; tests count and fail writes through it. */
export interface SampleStepFs {
  mkdirp(dir: string): void;
  replace(path: string, tmpPath: string, data: Uint8Array, mode: number): void;
  remove(path: string): void;
  touch(path: string): void;
}

const isObject = (v: PyJson): v is { [k: string]: PyJson } => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof PyFloat);
const MAX_SAMPLES_PER_STEP = 1 << 20;

function count(v: PyJson | undefined): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}

/** Checks one line; a problem names the field. */
export function parseSampleLine(text: string): { ok: true; line: SampleLine } | { ok: false; field: string; message: string } {
  let v: PyJson;
  try {
    v = parsePyJson(text, true);
  } catch (err) {
    return { ok: false, field: '', message: `not JSON: ${(err as Error).message}` };
  }
  if (!isObject(v)) return { ok: false, field: '', message: 'expected a JSON object' };
  const rolloutId = count(v.rollout_id);
  if (rolloutId === null) return { ok: false, field: 'rollout_id', message: 'expected an integer >= 0' };
  const n = count(v.count);
  if (n === null || n < 1 || n > MAX_SAMPLES_PER_STEP) return { ok: false, field: 'count', message: `expected an integer in 1..${MAX_SAMPLES_PER_STEP}` };
  const position = count(v.position);
  if (position === null || position >= n) return { ok: false, field: 'position', message: `expected an integer in 0..${n - 1}` };
  if (typeof v.evaluation !== 'boolean') return { ok: false, field: 'evaluation', message: 'expected true or false' };
  if (typeof v.call !== 'string' || v.call === '') return { ok: false, field: 'call', message: 'expected a non-empty string' };
  if (v.sample === undefined || !isObject(v.sample)) return { ok: false, field: 'sample', message: 'expected a JSON object' };
  return { ok: true, line: { rolloutId, evaluation: v.evaluation, call: v.call, count: n, position, sample: v.sample } };
}

const stepKey = (rolloutId: number, evaluation: boolean): string => `${evaluation ? 'eval' : 'rollout'}:${rolloutId}`;

interface Arriving {
  /** The step (`rollout:3`, `eval:0`). */
  step: string;
  call: string;
  /** When the call's first line came, in arrival order. */
  began: number;
  count: number;
  samples: (SampleFields | undefined)[];
  /** The raw lines, kept for the write-ahead log until the step is written. */
  lines: string[];
  have: number;
}

export class SampleSteps {
  private readonly arriving = new Map<string, Arriving>();
  private began = 0;
  /**
   * Calls that are over: written, or left out because a later one recorded their step first. A late or re-sent
   * line of one is dropped (it would mark its step as arriving for ever). Bounded: the oldest are forgotten.
   */
  private readonly over = new Set<string>();
  stepsWritten = 0;
  samplesReceived = 0;
  samplesRejected = 0;
  writeErrors = 0;

  constructor(
    /** The run directory (`samples/` is created below it). */
    private readonly runDir: string,
    private readonly fs: SampleStepFs,
    private readonly zstd: ((input: Uint8Array) => Uint8Array) | undefined,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string) => void,
  ) {}

  private path(rolloutId: number, evaluation: boolean): string {
    return join(this.runDir, SAMPLES_DIR, sampleStepFile(rolloutId, evaluation));
  }

  /** Takes a batch's lines; returns how many were taken and the problems of the rest. */
  take(body: string): { accepted: number; problems: IngestProblem[] } {
    const problems: IngestProblem[] = [];
    let accepted = 0;
    let lineNo = 0;
    for (const raw of body.split('\n')) {
      lineNo++;
      const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (text.trim() === '') continue;
      const r = parseSampleLine(text);
      if (!r.ok) {
        this.samplesRejected++;
        problems.push({ line: lineNo, field: r.field, message: r.message });
        continue;
      }
      accepted++;
      this.add(r.line, text);
    }
    return { accepted, problems };
  }

  private add(s: SampleLine, text: string): void {
    this.samplesReceived++;
    const step = stepKey(s.rolloutId, s.evaluation);
    // keyed by call: two calls recording one step at once (two processes) do not reset each other's samples
    const key = `${step}:${s.call}`;
    if (this.over.has(key)) return;
    let a = this.arriving.get(key);
    if (a === undefined || a.count !== s.count) {
      const others = [...this.arriving.values()].filter((o) => o.step === step && o.call !== s.call);
      if (others.length > 0) {
        this.log('warn', `${sampleStepFile(s.rolloutId, s.evaluation)} is being recorded by ${others.length + 1} calls at once (${[...others.map((o) => o.call), s.call].join(', ')}): the step holds one call's samples, each call completed replaces it, and a call that began before is left out; record a step's samples from one process`);
      }
      a = { step, call: s.call, began: this.began++, count: s.count, samples: new Array(s.count), lines: [], have: 0 };
      this.arriving.set(key, a);
      this.mark(s.rolloutId, s.evaluation);
    }
    if (a.samples[s.position] === undefined) a.have++;
    a.samples[s.position] = s.sample;
    a.lines.push(text);
    if (a.have === a.count) this.write(key, s.rolloutId, s.evaluation, a);
  }

  private mark(rolloutId: number, evaluation: boolean): void {
    try {
      this.fs.mkdirp(join(this.runDir, SAMPLES_DIR));
      this.fs.touch(this.path(rolloutId, evaluation) + PENDING_SUFFIX);
    } catch (err) {
      this.log('warn', `could not mark ${SAMPLES_DIR}/${sampleStepFile(rolloutId, evaluation)} as arriving (${(err as Error).message})`);
    }
  }

  private write(key: string, rolloutId: number, evaluation: boolean, a: Arriving): void {
    const path = this.path(rolloutId, evaluation);
    try {
      const data = encodeSampleStep(a.samples as SampleFields[], this.zstd);
      this.fs.replace(path, `${path}.tmp`, data, 0o644);
      this.arriving.delete(key);
      this.close(key);
      // a call of this step that began before this one is over: what it sent is replaced, and what it would still
      // send is dropped (a producer that stopped mid-step, or another process recording the step)
      for (const [k, o] of this.arriving) {
        if (o.step !== a.step || o.began > a.began) continue;
        this.arriving.delete(k);
        this.close(k);
        this.log('warn', `${sampleStepFile(rolloutId, evaluation)}: left out the ${o.have} of ${o.count} samples call ${o.call} had sent, replaced by call ${a.call}, which began after it`);
      }
      // a call that began after this one keeps the step marked as arriving
      if (![...this.arriving.values()].some((o) => o.step === a.step)) this.fs.remove(path + PENDING_SUFFIX);
      this.stepsWritten++;
    } catch (err) {
      // kept (and in the write-ahead log): written again when the next line of the step arrives or at the next start
      this.writeErrors++;
      this.log('error', `writing ${SAMPLES_DIR}/${sampleStepFile(rolloutId, evaluation)} failed (${(err as Error).message}); its ${a.count} samples are kept`);
    }
  }

  private close(key: string): void {
    this.over.add(key);
    if (this.over.size > 4096) this.over.delete(this.over.values().next().value as string);
  }

  /** The lines of steps not written yet (what the write-ahead log must keep), one batch per step. */
  held(): string[] {
    return [...this.arriving.values()].map((a) => a.lines.join('\n'));
  }

  /** Steps whose samples are still arriving. */
  arrivingSteps(): number {
    return new Set([...this.arriving.values()].map((a) => a.step)).size;
  }
}
