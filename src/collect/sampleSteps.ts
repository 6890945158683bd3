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

/**
 * The write-ahead log entry (the collector's own, written by each log rotation) naming the calls that are over, one
 * JSON string a line (`SampleSteps.overText`): a restart reads it back, so a late line of such a call replayed from
 * the log is left out as it was before the restart. Not a stream producers can send to.
 */
export const SAMPLES_OVER_ENTRY = 'samples.over';

/** How many calls that are over are remembered (the oldest are forgotten first). */
const OVER_KEPT = 4096;

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
  /** Writes a small file (the `.pending` marker, holding why its step is not written when that is known). */
  touch(path: string, text: string): void;
}

/** Encodes one step's samples (throws for samples it cannot encode). */
export type SampleStepEncoder = (samples: readonly SampleFields[], zstd?: (input: Uint8Array) => Uint8Array) => Uint8Array;

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
  /** Why writing the complete step failed (an I/O error: written again with the step's next line or at the next start). */
  failure?: string;
}

export class SampleSteps {
  private readonly arriving = new Map<string, Arriving>();
  private began = 0;
  /**
   * Calls that are over (`step:call`): written, or left out because a later one recorded their step first. A late or
   * re-sent line of one is dropped (it would mark its step as arriving for ever). Bounded: the oldest are forgotten.
   * Kept across a restart by the write-ahead log (`overText`, `restoreOver`).
   */
  private readonly over = new Set<string>();
  /** `overText()` as of the current `over` (null once it changed). */
  private overCache: string | null = null;
  /** The call each step was last written from (a later call writing it again says so). */
  private readonly writtenBy = new Map<string, string>();
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
    private readonly encode: SampleStepEncoder = encodeSampleStep,
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
      const late = this.add(r.line, text);
      if (late === null) accepted++;
      else {
        this.samplesRejected++;
        problems.push({ line: lineNo, field: 'call', message: late });
      }
    }
    return { accepted, problems };
  }

  /** Takes one line; returns why it was left out when it was (a late line of a call that is over), else null. */
  private add(s: SampleLine, text: string): string | null {
    const step = stepKey(s.rolloutId, s.evaluation);
    // keyed by call: two calls recording one step at once (two processes) do not reset each other's samples
    const key = `${step}:${s.call}`;
    if (this.over.has(key)) {
      return `call ${s.call} of ${sampleStepFile(s.rolloutId, s.evaluation)} is over (its step was written, or replaced by a later call); a late or re-sent line of it is left out`;
    }
    this.samplesReceived++;
    let a = this.arriving.get(key);
    if (a !== undefined && a.count !== s.count) {
      this.log('warn', `${sampleStepFile(s.rolloutId, s.evaluation)}: call ${s.call} sent a line with count ${s.count} after ${a.have} lines with count ${a.count}; its earlier ${a.have} samples are left out and the call starts again`);
    }
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
    return null;
  }

  private mark(rolloutId: number, evaluation: boolean): void {
    try {
      this.fs.mkdirp(join(this.runDir, SAMPLES_DIR));
      this.fs.touch(this.path(rolloutId, evaluation) + PENDING_SUFFIX, '');
    } catch (err) {
      this.log('warn', `could not mark ${SAMPLES_DIR}/${sampleStepFile(rolloutId, evaluation)} as arriving (${(err as Error).message})`);
    }
  }

  private write(key: string, rolloutId: number, evaluation: boolean, a: Arriving): void {
    const file = sampleStepFile(rolloutId, evaluation);
    const path = this.path(rolloutId, evaluation);
    const encoded = this.encodeStep(a, file);
    if ('failure' in encoded) {
      // no sample fails alone (zstd, or the step's size as a whole): kept, and encoded again like an I/O error
      this.writeErrors++;
      a.failure = encoded.failure;
      this.log('error', `encoding ${SAMPLES_DIR}/${file} failed (${encoded.message}); its ${a.count} samples are kept`);
      return;
    }
    const data = encoded.data;
    if (data === null) {
      // nothing of the step can be encoded: it can never be written, so it is over (the marker says why)
      this.arriving.delete(key);
      this.close(key);
      this.note(rolloutId, evaluation, a.step, `its ${a.count} samples arrived, but none of them could be encoded (the collector's log names them)`);
      return;
    }
    try {
      this.fs.replace(path, `${path}.tmp`, data, 0o644);
    } catch (err) {
      // an I/O error: kept (and in the write-ahead log), written again when the next line of the step arrives or at the next start
      this.writeErrors++;
      a.failure = `its ${a.count} samples arrived, but writing the step failed (${(err as Error).message})`;
      this.log('error', `writing ${SAMPLES_DIR}/${file} failed (${(err as Error).message}); its ${a.count} samples are kept`);
      return;
    }
    this.arriving.delete(key);
    this.close(key);
    const before = this.writtenBy.get(a.step);
    if (before !== undefined && before !== a.call) this.log('warn', `${file}: call ${a.call} replaced the step call ${before} had written`);
    this.writtenBy.set(a.step, a.call);
    // a call of this step that began before this one is over: what it sent is replaced, and what it would still
    // send is dropped (a producer that stopped mid-step, or another process recording the step)
    for (const [k, o] of this.arriving) {
      if (o.step !== a.step || o.began > a.began) continue;
      this.arriving.delete(k);
      this.close(k);
      this.log('warn', `${file}: left out the ${o.have} of ${o.count} samples call ${o.call} had sent, replaced by call ${a.call}, which began after it`);
    }
    // a call that began after this one keeps the step marked as arriving
    if (![...this.arriving.values()].some((o) => o.step === a.step)) this.fs.remove(path + PENDING_SUFFIX);
    this.stepsWritten++;
  }

  /**
   * The step's file; a sample that cannot be encoded (a deterministic failure: it would fail at every attempt) is
   * left out with a warning naming it, so the rest of the step is written. `data` is null when no sample can be
   * encoded; `failure` when the step fails while no sample fails alone (it may encode at a later attempt).
   */
  private encodeStep(a: Arriving, file: string): { data: Uint8Array | null } | { failure: string; message: string } {
    const samples = a.samples as SampleFields[];
    const failed = (err: unknown) => ({ failure: `its ${a.count} samples arrived, but encoding the step failed (${(err as Error).message})`, message: (err as Error).message });
    let whole: unknown;
    try {
      return { data: this.encode(samples, this.zstd) };
    } catch (err) {
      whole = err;
    }
    const bad = new Map<number, string>();
    if (samples.length === 1) this.findBad(samples, 0, 1, bad);
    else {
      const mid = samples.length >> 1;
      this.findBad(samples, 0, mid, bad);
      this.findBad(samples, mid, samples.length, bad);
    }
    if (bad.size === 0) return failed(whole);
    const good = samples.filter((_, i) => !bad.has(i));
    let data: Uint8Array | null = null;
    try {
      if (good.length > 0) data = this.encode(good, this.zstd);
    } catch (err) {
      // the rest fails as a whole (zstd, its size): the step is kept and encoded again later
      return failed(err);
    }
    this.samplesRejected += bad.size;
    const named = [...bad].slice(0, 5).map(([i, why]) => `position ${i} (${why})`);
    this.log('warn', `${SAMPLES_DIR}/${file}: left out ${bad.size} of the ${samples.length} samples of call ${a.call}, which could not be encoded: ${named.join('; ')}${bad.size > 5 ? `; and ${bad.size - 5} more` : ''}${data === null ? '; the step is not written' : '; the rest of the step is written'}`);
    return { data };
  }

  /**
   * Finds the samples in `from..to` that cannot be encoded alone, halving: a part that encodes holds none, so a few
   * bad samples among many cost a few encodes each, not one per sample.
   */
  private findBad(samples: readonly SampleFields[], from: number, to: number, bad: Map<number, string>): void {
    try {
      this.encode(samples.slice(from, to));
      return;
    } catch (err) {
      if (to - from === 1) {
        bad.set(from, (err as Error).message);
        return;
      }
    }
    const mid = (from + to) >> 1;
    this.findBad(samples, from, mid, bad);
    this.findBad(samples, mid, to, bad);
  }

  /**
   * Says in the step's `.pending` marker why it will not be written: a reader answers with it at once, not "still
   * being written". Not while another call of the step is still arriving (it may complete the step).
   */
  private note(rolloutId: number, evaluation: boolean, step: string, why: string): void {
    if ([...this.arriving.values()].some((o) => o.step === step)) return;
    try {
      this.fs.touch(this.path(rolloutId, evaluation) + PENDING_SUFFIX, why);
    } catch (err) {
      this.log('warn', `could not note in ${SAMPLES_DIR}/${sampleStepFile(rolloutId, evaluation)}${PENDING_SUFFIX} why the step is not written (${(err as Error).message})`);
    }
  }

  /**
   * The collector stops: each step still arriving is said in the log (which call, how many of its samples came),
   * and its marker says it, so a reader's answer names what is missing.
   */
  stop(): void {
    for (const a of this.arriving.values()) {
      const [kind, id] = a.step.split(':');
      const rolloutId = Number(id);
      const evaluation = kind === 'eval';
      const file = sampleStepFile(rolloutId, evaluation);
      const why = a.failure ?? `only ${a.have} of its ${a.count} samples (call ${a.call}) arrived before the collector stopped`;
      this.log('warn', `stopping with ${SAMPLES_DIR}/${file} not written: ${why}; its samples are kept in the write-ahead log and the step is written if its other samples arrive at the next start`);
      try {
        this.fs.touch(this.path(rolloutId, evaluation) + PENDING_SUFFIX, why);
      } catch (err) {
        this.log('warn', `could not note in ${SAMPLES_DIR}/${file}${PENDING_SUFFIX} why the step is not written (${(err as Error).message})`);
      }
    }
  }

  private close(key: string): void {
    this.over.add(key);
    if (this.over.size > OVER_KEPT) this.over.delete(this.over.values().next().value as string);
    this.overCache = null;
  }

  /** The calls that are over, oldest first, one JSON string a line (what a log rotation keeps). */
  overText(): string {
    if (this.overCache === null) {
      let text = '';
      for (const key of this.over) text += `${JSON.stringify(key)}\n`;
      this.overCache = text;
    }
    return this.overCache;
  }

  /** Takes back the calls `overText` named (at a restart, before the log's later lines): their late lines are left out. */
  restoreOver(text: string): void {
    for (const line of text.split('\n')) {
      if (line === '') continue;
      let key: unknown;
      try {
        key = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof key !== 'string' || this.arriving.has(key)) continue;
      this.close(key);
    }
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
