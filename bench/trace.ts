// The Trace view at scale: a slime dump of N samples × ~20 spans (default 10,000), written with the torch
// writer, then read, laid out and drawn in headless Chromium (the self-contained page). One JSON line.
// Usage: node --import tsx bench/trace.ts [--samples 10000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { writeTraceOutputs } from '../src/commands/trace.ts';
import { PyFloat } from '../src/formats/torch/value.ts';
import { saveTorch } from '../src/formats/torch/writer.ts';
import { traceView } from '../src/queries/slimeTraceView.ts';
import { readSlimeDump } from '../src/run/slime/dump.ts';
import { launch } from '../test/e2e/harness.ts';

const { values } = parseArgs({ options: { samples: { type: 'string' } } });
const n = Number(values.samples ?? 10000);
const dir = mkdtempSync(join(tmpdir(), 'rlsight-bench-trace-'));
let seq = 0;
const id = (): string => (++seq).toString(16).padStart(32, '0');

function sampleTrace(i: number): Record<string, unknown> {
  const events: Record<string, unknown>[] = [];
  const t = 1.7e9 + i * 0.01;
  const span = (name: string, a: number, b: number, parent: string | null, attrs?: Record<string, unknown>, endAttrs?: Record<string, unknown>): string => {
    const sid = id();
    events.push({ type: 'span_start', name, ts: a, trace_id: 't', sample_id: i, group_id: i >> 3, attempt: 0, span_id: sid, ...(parent ? { parent_span_id: parent } : {}), ...(attrs ? { attrs } : {}) });
    events.push({ type: 'span_end', name, ts: b, trace_id: 't', sample_id: i, group_id: i >> 3, attempt: 0, span_id: sid, ...(endAttrs ? { attrs: endAttrs } : {}) });
    return sid;
  };
  const g = span('generate_and_rm_group', t, t + 30, null, { group_size: 8 });
  const r = span('generate_and_rm', t, t + 29, g);
  const tool = span('generate_with_tool', t + 0.1, t + 28, r);
  for (let k = 0; k < 8; k++) {
    const a = t + 0.1 + k * 3.4;
    span('sglang_generate', a, a + 2, tool, { max_new_tokens: 512 }, { e2e_latency: new PyFloat(2), queue_time: 0.01, sglang_request_id: id(), pd_prefill_forward_duration: 0.05, pd_decode_forward_duration: 1.8 });
    span('tool_call', a + 2.1, a + 3.3, tool);
  }
  span('reward_model', t + 28.5, t + 29, r);
  return { index: i, group_index: i >> 3, status: 'completed', reward: new PyFloat(i % 2), response_length: 100, trace: { version: 1, trace_id: 't', events, sample_id: i, group_id: i >> 3, attempt: 0 } };
}

try {
  const path = join(dir, 'rollout_0.pt');
  let t = performance.now();
  await saveTorch({ rollout_id: 0, samples: Array.from({ length: n }, (_, i) => sampleTrace(i)) } as never, path);
  const writeMs = performance.now() - t;
  t = performance.now();
  const dump = await readSlimeDump(path);
  const readMs = performance.now() - t;
  t = performance.now();
  const answer = traceView(dump.samples, dump);
  const layoutMs = performance.now() - t;
  const items = answer.rows.reduce((a, r) => a + r.items.length, 0);
  const answerBytes = Buffer.byteLength(JSON.stringify(answer));
  const out = await writeTraceOutputs(path, join(dir, 'out'));
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  t = performance.now();
  await page.goto(`file://${out.html}`);
  await page.waitForSelector('[data-testid=trace-canvas][data-drawn-rows]');
  const openMs = performance.now() - t;
  // Scroll through the rows: frames drawn per second while scrolling.
  const frame: number = await page.evaluate(async () => {
    const doc = (globalThis as any).document;
    const sc = doc.querySelector('[data-testid=trace-scroll]');
    const t0 = performance.now();
    for (let k = 0; k < 50; k++) {
      sc.scrollTop += 400;
      await new Promise((r) => (globalThis as any).requestAnimationFrame(() => (globalThis as any).requestAnimationFrame(r)));
    }
    return (performance.now() - t0) / 50;
  });
  await browser.close();
  process.stdout.write(
    JSON.stringify({ bench: 'trace-view', samples: n, items, write_ms: Math.round(writeMs), read_ms: Math.round(readMs), layout_ms: Math.round(layoutMs), answer_mb: +(answerBytes / 2 ** 20).toFixed(1), page_open_ms: Math.round(openMs), scroll_frame_ms: +frame.toFixed(1), note: 'machine shared and loaded: figures are noisy' }) + '\n',
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
