// `/api/meta`: the run catalog and what the app may show.
import type { Hono } from 'hono';
import { jsonResponse } from './json.ts';
import { MAX_WINDOW_S } from './params.ts';
import type { RunSources } from './sources.ts';
import type { Meta } from '../wire/index.ts';

export function mountMeta(app: Hono, run: RunSources, opts: { follow: boolean; useUtilizationOverview: boolean }): void {
  app.get('/api/meta', async (c) => {
    const m = await run.meta();
    const body: Meta = {
      mode: opts.follow ? 'follow' : 'static',
      run_name: m.run_name,
      start_ts: m.start_ts,
      wandb_url: m.wandb_url,
      data_buffer_length: m.data_buffer_length,
      time_range: m.time_range,
      rollout_ids: m.rollout_ids,
      metric_keys: m.metric_keys,
      engine_metric_keys: m.engine_metric_keys,
      step_keys: m.step_keys,
      capabilities: {
        has_metrics: m.has_metrics,
        has_tokenizer: m.has_tokenizer,
        has_timeline: m.has_timeline,
        has_engine_series: m.has_engine_series,
        max_window_s: MAX_WINDOW_S,
        use_utilization_overview: opts.useUtilizationOverview,
      },
    };
    return jsonResponse(c, body);
  });
}
