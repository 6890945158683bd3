// An open run seen through the AnswerRun interface the health board, search, diffs and exports read.
import { basename } from 'node:path';
import type { AnswerRun, SampleText } from '../queries/answerRun.ts';
import { chatText } from '../run/dumps/sampleText.ts';
import type { OpenRun } from './run.ts';

export function answerRunOf(run: OpenRun, cacheDir?: string): AnswerRun {
  const { dumps, store } = run;
  return {
    name: store.meta()?.run_name ?? basename(run.runDir),
    cacheDir: cacheDir ?? null,
    rolloutIds: () => dumps.rolloutIds(),
    summary: (step, evaluation) => dumps.summary(step, evaluation),
    groups: (step, evaluation) => dumps.groups(step, evaluation),
    stepAggregates: () => dumps.stepAggregates(),
    tokens: (step, sampleIndex, evaluation) => dumps.tokens(step, sampleIndex, { evaluation }),
    messages: (step, sampleIndex, evaluation) => dumps.messages(step, sampleIndex, evaluation),
    async sampleTexts(step, evaluation): Promise<SampleText[]> {
      const [texts, conversations] = await Promise.all([dumps.sampleTexts(step, evaluation), dumps.conversationRows(step, evaluation)]);
      return texts.map((t) => {
        const conv = conversations?.get(t.sampleIndex);
        const fields = conv && Array.isArray(conv.messages) ? { ...t.fields, conversation: chatText(conv.messages) } : t.fields;
        return {
          step,
          evaluation,
          sample_index: t.sampleIndex,
          group_index: t.groupIndex,
          status: t.status,
          reward: t.reward,
          fields,
          ids: t.ids,
        };
      });
    },
    metricsRecords: () => store.metricsRecords(),
    topologySnapshots: () => store.topologySnapshots(),
    phaseEvents: () => store.phaseEvents(),
    startTs: () => store.meta()?.start_ts ?? null,
  };
}
