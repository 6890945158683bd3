// `rlsight demo`: generate a demo run and serve it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseServeFlags, serve } from './serve.ts';

/** Metrics-only steps before the demo's six detailed ones: ~200 steps of metrics, dumps for the last six. */
const DEMO_HISTORY_STEPS = 194;

export async function demo(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      out: { type: 'string' },
      large: { type: 'boolean' },
    },
  });
  const out = values.out ? resolve(values.out) : join(mkdtempSync(join(tmpdir(), 'rlsight-demo-')), 'run');
  const { generateDemoRun } = await import('../demo/index.ts');
  console.log(`generating a ${values.large ? 'large ' : ''}demo run in ${out} …`);
  await generateDemoRun(out, { large: values.large ?? false, historySteps: DEMO_HISTORY_STEPS });
  const flags = ['--dump-details', out];
  if (values.host !== undefined) flags.push('--host', values.host);
  if (values.port !== undefined) flags.push('--port', values.port);
  await serve(parseServeFlags(flags));
}

