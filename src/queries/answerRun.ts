// What the answers no single chart gives (health, search, diffs, exports) read of an open run: step tables,
// sample texts, token views, logged metrics and telemetry records. Any run format that yields these works.
import type { MetricsRecord, PhaseEvent, SampleTextRecord, TopologySnapshot } from '../run/model.ts';
import { basename } from 'node:path';
import { DumpStillWriting } from '../run/errors.ts';
import type { Conversation, RolloutTable, TokenView } from '../wire/index.ts';
import type { StepAggregate } from './rollouts.ts';
import type { RunAnswers } from './runAnswers.ts';

/** The searchable text of one sample. */
export interface SampleText {
  step: number;
  evaluation: boolean;
  sample_index: number;
  group_index: number | null;
  status: string;
  reward: number | null;
  /** Named text fields: `prompt`, `response`, `label`, `conversation` (the sidecar's messages), `metadata`. */
  fields: Record<string, string>;
  /** Identifiers recorded with the sample: request ids, trace ids, session ids. */
  ids: string[];
}

export interface AnswerRun {
  /** The run's name as the server lists it. */
  readonly name: string;
  rolloutIds(): Promise<{ train: number[]; eval: number[] }>;
  summary(step: number, evaluation: boolean): Promise<RolloutTable>;
  groups(step: number, evaluation: boolean): Promise<RolloutTable>;
  stepAggregates(): Promise<StepAggregate[]>;
  sampleTexts(step: number, evaluation: boolean): Promise<SampleText[]>;
  /** The same texts in order, in batches handed out while the step is still being read. */
  sampleTextBatches(step: number, evaluation: boolean): AsyncIterable<SampleText[]>;
  tokens(step: number, sampleIndex: number, evaluation: boolean): Promise<TokenView>;
  messages(step: number, sampleIndex: number, evaluation: boolean): Promise<Conversation>;
  metricsRecords(): readonly MetricsRecord[];
  topologySnapshots(): readonly TopologySnapshot[];
  phaseEvents(): readonly PhaseEvent[];
  startTs(): number | null;
  /** Changes whenever the files a step's answers read change (its search texts are kept until then). */
  stepStamp(step: number, evaluation: boolean): Promise<string>;
  /** A derived cache entry (`--cache-dir`), or null when there is none or no cache. */
  readCache(name: string): Promise<string | null>;
  /** Stores a derived cache entry (`text` is only called with a cache); a failure to write is ignored. */
  writeCache(name: string, text: () => string): Promise<void>;
}

/** Reads one step's table, or null when its dump is still being written (a run-wide answer skips it). */
export async function readableStep<T>(read: () => Promise<T>, step: number, warnings: string[]): Promise<T | null> {
  try {
    return await read();
  } catch (e) {
    if (e instanceof DumpStillWriting) {
      warnings.push(`step ${step}: ${e.message}`);
      return null;
    }
    throw e;
  }
}

function sampleText(t: SampleTextRecord, step: number, evaluation: boolean): SampleText {
  return { step, evaluation, sample_index: t.sampleIndex, group_index: t.groupIndex, status: t.status, reward: t.reward, fields: t.fields, ids: t.ids };
}

/** An open run seen through the AnswerRun interface the health board, search, diffs and exports read. */
export function answerRunOf(run: RunAnswers): AnswerRun {
  const { model } = run;
  const store = model.telemetry;
  const cache = run.cache;
  let unstamped = 0;
  return {
    name: store.meta()?.run_name ?? basename(model.dir),
    stepStamp: (step, evaluation) => model.stepStamp?.(step, evaluation) ?? Promise.resolve(`unstamped:${unstamped++}`),
    readCache: (name) => cache?.read(name) ?? Promise.resolve(null),
    writeCache: (name, text) => cache?.write(name, text) ?? Promise.resolve(),
    rolloutIds: () => model.rolloutIds(),
    summary: (step, evaluation) => run.summary(step, evaluation),
    groups: (step, evaluation) => run.groups(step, evaluation),
    stepAggregates: () => run.stepAggregates(),
    tokens: (step, sampleIndex, evaluation) => run.tokens(step, sampleIndex, { start: 0, evaluation }),
    messages: (step, sampleIndex, evaluation) => run.messages(step, sampleIndex, evaluation),
    async sampleTexts(step, evaluation): Promise<SampleText[]> {
      return (await model.sampleTexts(step, evaluation)).map((t) => sampleText(t, step, evaluation));
    },
    async *sampleTextBatches(step, evaluation): AsyncGenerator<SampleText[]> {
      if (!model.sampleTextBatches) {
        yield (await model.sampleTexts(step, evaluation)).map((t) => sampleText(t, step, evaluation));
        return;
      }
      for await (const batch of model.sampleTextBatches(step, evaluation)) yield batch.map((t) => sampleText(t, step, evaluation));
    },
    metricsRecords: () => store.metricsRecords(),
    topologySnapshots: () => store.topologySnapshots(),
    phaseEvents: () => store.phaseEvents(),
    startTs: () => store.meta()?.start_ts ?? null,
  };
}
