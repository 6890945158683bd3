// `/api/rollout/{id}/…`: step summary and groups, lifecycle lanes, one sample's conversation and tokens.
import type { Hono } from 'hono';
import * as z from 'zod';
import { jsonResponse, PARTIAL_HEADER } from './json.ts';
import { answerSignal } from './sharedAnswers.ts';
import { boolParam, floatParam, intParam, parseParams } from './params.ts';
import type { RunSources } from '../queries/runAnswers.ts';

// Path ids are integers only, so no path parameter ever becomes a file name.
const rolloutPath = z.object({ rollout_id: intParam });
const samplePath = z.object({ rollout_id: intParam, sample_index: intParam });
const evalQuery = z.object({ eval: boolParam.default(false) });
const previewQuery = z.object({ eval: boolParam.default(false), first: boolParam.default(false) });
const trajectoriesQuery = z.object({ sample_index: intParam.optional() });
const sampleStepPath = z.object({ sample_index: intParam });
const sampleStepQuery = z.object({ near: floatParam.optional() });
const tokensQuery = z.object({ eval: boolParam.default(false), start: intParam.default(0), end: intParam.optional() });

export function mountRollout(app: Hono, run: RunSources): void {
  app.get('/api/rollout/:rollout_id/summary', async (c) => {
    const { rollout_id: rid } = parseParams(rolloutPath, c.req.param());
    const q = parseParams(evalQuery, c.req.query());
    return jsonResponse(c, await run.summary(rid, q.eval, answerSignal(c)));
  });

  // rlsight's own: the summary as soon as the step's samples are decoded (with `first`, its first samples as
  // soon as they are); while its train side is still joined the answer says so (and is never kept), once
  // the step is read it is the summary
  app.get('/api/rlsight/rollout/:rollout_id/preview', async (c) => {
    const { rollout_id: rid } = parseParams(rolloutPath, c.req.param());
    const q = parseParams(previewQuery, c.req.query());
    const preview = await run.summaryPreview(rid, q.eval, answerSignal(c), q.first);
    if (preview.train_pending) c.header(PARTIAL_HEADER, '0/1');
    return jsonResponse(c, preview);
  });

  app.get('/api/rollout/:rollout_id/groups', async (c) => {
    const { rollout_id: rid } = parseParams(rolloutPath, c.req.param());
    const q = parseParams(evalQuery, c.req.query());
    return jsonResponse(c, await run.groups(rid, q.eval, answerSignal(c)));
  });

  app.get('/api/rollout/:rollout_id/trajectories', async (c) => {
    const { rollout_id: rid } = parseParams(rolloutPath, c.req.param());
    const q = parseParams(trajectoriesQuery, c.req.query());
    return jsonResponse(c, await run.trajectories(rid, q.sample_index));
  });

  app.get('/api/rollout/:rollout_id/sample/:sample_index/messages', async (c) => {
    const { rollout_id: rid, sample_index: idx } = parseParams(samplePath, c.req.param());
    const q = parseParams(evalQuery, c.req.query());
    return jsonResponse(c, await run.messages(rid, idx, q.eval));
  });

  // rlsight's own: a sample without a recorded conversation is a 200 with the empty shape, not a 404.
  app.get('/api/rlsight/rollout/:rollout_id/sample/:sample_index/messages', async (c) => {
    const { rollout_id: rid, sample_index: idx } = parseParams(samplePath, c.req.param());
    const q = parseParams(evalQuery, c.req.query());
    return jsonResponse(c, await run.messagesOrNone(rid, idx, q.eval));
  });

  app.get('/api/rollout/:rollout_id/sample/:sample_index/tokens', async (c) => {
    const { rollout_id: rid, sample_index: idx } = parseParams(samplePath, c.req.param());
    const q = parseParams(tokensQuery, c.req.query());
    return jsonResponse(c, await run.tokens(rid, idx, { start: q.start, end: q.end, evaluation: q.eval }));
  });

  // rlsight's own: which train step holds a sample (`near`: a time the sample was seen, to look there first).
  app.get('/api/rlsight/samples/:sample_index/step', async (c) => {
    const { sample_index: idx } = parseParams(sampleStepPath, c.req.param());
    const q = parseParams(sampleStepQuery, c.req.query());
    return jsonResponse(c, await run.sampleStep(idx, q.near));
  });
}
