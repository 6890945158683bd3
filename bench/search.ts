// Search at reference scale: one step of 4,096 samples with ~600-word responses, a chat prompt and a request id
// each, written as a miles run and as a slime run. Prints one JSON line: for the miles run (and under `slime`
// for the slime one) the time to the first match and to the end of a cold scan (the step's dump decoded), the
// index build, warm scans (phrase, words, a request id, a regex), and the machine's load.
//   node --import tsx bench/search.ts            generate into a temp dir, measure, clean up
//   RLSIGHT_BENCH_SMALL=1 ...                     a 256-sample smoke version
// Each run is measured in a fresh process (RLSIGHT_BENCH_MEASURE=DIR measures one run directory).
import { mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SeededRandom } from '../src/demo/random.ts';
import { PyFloat, saveTorch, type Picklable } from '../src/formats/torch/writer.ts';
import { searchRun } from '../src/queries/search.ts';
import { SearchTexts } from '../src/run/searchTexts.ts';
import { openRun } from '../src/commands/openRun.ts';

const SAMPLES = process.env.RLSIGHT_BENCH_SMALL === '1' ? 256 : 4096;
const WORDS_PER_RESPONSE = 600;
const NEEDLE_SAMPLE = Math.floor(SAMPLES * 0.3);

/** The step's dump; a `dashboard/` folder beside it makes the directory a miles run, without one it is slime's layout. */
async function writeRun(dir: string, format: 'miles' | 'slime'): Promise<void> {
  const random = new SeededRandom(7);
  const r = () => random.next();
  const vocab = Array.from({ length: 20000 }, () => Array.from({ length: 3 + Math.floor(r() * 6) }, () => String.fromCharCode(97 + Math.floor(r() * 26))).join(''));
  const word = () => vocab[Math.floor(r() ** 3 * vocab.length)];
  const samples: Record<string, Picklable>[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const words = Array.from({ length: WORDS_PER_RESPONSE }, word);
    if (i === NEEDLE_SAMPLE) words.splice(300, 0, 'the', 'zebra', 'crossing', 'protocol');
    samples.push({
      index: i,
      group_index: i >> 3,
      prompt: [{ role: 'user', content: `Problem ${i >> 3}: ${Array.from({ length: 40 }, word).join(' ')}` }],
      response: words.join(' '),
      response_length: WORDS_PER_RESPONSE,
      reward: new PyFloat(i % 3 === 0 ? 1 : 0),
      status: 'completed',
      tokens: Int32Array.from({ length: 8 }, (_, k) => k),
      weight_versions: ['0'],
      metadata: { sglang_request_id: `req-${i.toString(16).padStart(8, '0')}` },
    });
  }
  mkdirSync(join(dir, 'rollout_data'), { recursive: true });
  if (format === 'miles') mkdirSync(join(dir, 'dashboard'));
  await saveTorch({ rollout_id: 0, metadata: {}, samples }, join(dir, 'rollout_data', '0.pt'));
  const old = Date.now() / 1000 - 3600;
  utimesSync(join(dir, 'rollout_data', '0.pt'), old, old);
}

async function scan(search: Parameters<typeof searchRun>[0], run: Parameters<typeof searchRun>[1], q: string): Promise<{ first: number | null; all: number; matches: number }> {
  const t0 = performance.now();
  let first: number | null = null;
  let matches = 0;
  for await (const e of searchRun(search, run, q, { limit: 1000 })) {
    if (e.type === 'match') {
      matches++;
      first ??= performance.now() - t0;
    }
  }
  return { first, all: performance.now() - t0, matches };
}

/** Cold scan, index build, warm scans of one run directory. */
async function measure(dir: string) {
  const run = await openRun(dir);
  const answers = run;
  const search = new SearchTexts(answers);
  const cold = await scan(search, answers, '"zebra crossing protocol"');
  const buildStart = performance.now();
  await search.idle();
  const indexMs = performance.now() - buildStart;
  const warmPhrase = await scan(search, answers, '"zebra crossing protocol"');
  const warmWords = await scan(search, answers, 'zebra crossing ');
  const warmId = await scan(search, answers, `req-${NEEDLE_SAMPLE.toString(16).padStart(8, '0')}`);
  const warmRegex = await scan(search, answers, '/zebra\\s+cross/');
  await run.close();
  const ms = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);
  return {
    format: run.model.format,
    cold_first_match_ms: ms(cold.first),
    cold_full_scan_ms: ms(cold.all),
    index_build_ms: ms(indexMs),
    warm_phrase_ms: ms(warmPhrase.all),
    warm_words_ms: ms(warmWords.all),
    warm_id_ms: ms(warmId.all),
    warm_regex_ms: ms(warmRegex.all),
    matches: [cold.matches, warmPhrase.matches, warmWords.matches, warmId.matches, warmRegex.matches],
  };
}

if (process.env.RLSIGHT_BENCH_MEASURE) {
  // A fresh process per run: the cold scan meets a step no one has read (and a heap without the generator's data).
  console.log(JSON.stringify(await measure(process.env.RLSIGHT_BENCH_MEASURE)));
} else {
  const base = mkdtempSync(join(tmpdir(), 'rlsight-bench-search-'));
  try {
    const figures: Record<string, unknown> = {};
    for (const format of ['miles', 'slime'] as const) {
      await writeRun(join(base, format), format);
      const out = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
        env: { ...process.env, RLSIGHT_BENCH_MEASURE: join(base, format) },
        encoding: 'utf8',
      });
      figures[format] = JSON.parse(out.trim().split('\n').at(-1)!);
    }
    const { miles, slime } = figures;
    console.log(JSON.stringify({ samples: SAMPLES, ...(miles as object), slime, loadavg: loadavg().map((x) => Math.round(x * 100) / 100) }));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
