// Search at reference scale: one step of 4,096 samples with ~600-word responses, a chat prompt and a request id
// each. Prints one JSON line: time to the first match and to the end of a cold scan (the step's dump decoded),
// a warm scan once the step's index is built (words and phrase queries), a warm regex scan, and the load.
//   node --import tsx bench/search.ts            generate into a temp dir, measure, clean up
//   RLSIGHT_BENCH_SMALL=1 ...                     a 256-sample smoke version
import { mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeededRandom } from '../src/demo/random.ts';
import { PyFloat, saveTorch, type Picklable } from '../src/formats/torch/writer.ts';
import { RunSearch, searchRun } from '../src/queries/search.ts';
import { openRun } from '../src/server/run.ts';

const SAMPLES = process.env.RLSIGHT_BENCH_SMALL === '1' ? 256 : 4096;
const WORDS_PER_RESPONSE = 600;
const NEEDLE_SAMPLE = Math.floor(SAMPLES * 0.3);

async function writeRun(dir: string): Promise<void> {
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
  await saveTorch({ rollout_id: 0, metadata: {}, samples }, join(dir, 'rollout_data', '0.pt'));
  const old = Date.now() / 1000 - 3600;
  utimesSync(join(dir, 'rollout_data', '0.pt'), old, old);
}

async function scan(search: RunSearch, run: Parameters<typeof searchRun>[1], q: string): Promise<{ first: number | null; all: number; matches: number }> {
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

const base = mkdtempSync(join(tmpdir(), 'rlsight-bench-search-'));
try {
  const dir = join(base, 'run');
  await writeRun(dir);
  const run = await openRun(dir);
  const answers = run.answers();
  const search = new RunSearch(answers);
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
  console.log(
    JSON.stringify({
      samples: SAMPLES,
      cold_first_match_ms: ms(cold.first),
      cold_full_scan_ms: ms(cold.all),
      index_build_ms: ms(indexMs),
      warm_phrase_ms: ms(warmPhrase.all),
      warm_words_ms: ms(warmWords.all),
      warm_id_ms: ms(warmId.all),
      warm_regex_ms: ms(warmRegex.all),
      matches: [cold.matches, warmPhrase.matches, warmWords.matches, warmId.matches, warmRegex.matches],
      loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
    }),
  );
} finally {
  rmSync(base, { recursive: true, force: true });
}
