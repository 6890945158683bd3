// The self-contained page `rlsight trace` writes: the trace answer and every sample's details are
// inlined in the page (no fetch), so it opens from file://.
import type { TraceAnswer, TraceDetails } from '../../../src/wire/trace.ts';
import { EXPLORER_CSS, mountTraceExplorer } from './explorer.ts';

interface Inlined {
  title: string;
  answer: TraceAnswer;
  details: Record<string, TraceDetails>;
}

const node = document.getElementById('rlsight-trace-data');
const data = JSON.parse(node?.textContent ?? 'null') as Inlined | null;
const style = document.createElement('style');
style.textContent = `${EXPLORER_CSS} html,body{margin:0;height:100%} body{display:flex;flex-direction:column;padding:8px;box-sizing:border-box} h1{font:600 15px system-ui;margin:0 0 6px}`;
document.head.append(style);
if (!data) {
  document.body.textContent = 'no trace data in this page';
} else {
  const h = document.createElement('h1');
  h.textContent = data.title;
  const root = document.createElement('div');
  root.style.flex = '1';
  root.style.minHeight = '0';
  document.body.append(h, root);
  mountTraceExplorer(root, data.answer, {
    loadDetails: async (row) => data.details[String(row)] ?? { row, sample_index: null, trace_id: null, items: [] },
  });
}
