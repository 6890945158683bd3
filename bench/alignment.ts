// The sample diff's token alignment on 9,000-token response pairs: near-identical (a few dozen edits: aligned
// exactly), unrelated (stops at the edit cap and falls back to prefix and suffix) and same-vocabulary unrelated
// (a small alphabet, so many short matches: the slowest case for Myers). Prints one JSON line: the median of
// five runs per case in ms (the alignment alone, and with five series laid over it and encoded as JSON), the
// answer's bytes, whether it fell back, and the load average (the machine is shared: figures are noisy).
//   node --import tsx bench/alignment.ts
import { loadavg } from 'node:os';
import { SeededRandom } from '../src/demo/random.ts';
import { alignSeries, alignTokens } from '../src/queries/tokenAlignment.ts';
import { TOKEN_ALIGNMENT_EDIT_CAP } from '../src/queries/limits.ts';

const N = 9000;
const random = new SeededRandom(11);
const ids = (n: number, vocab: number) => Array.from({ length: n }, () => Math.floor(random.next() * vocab));

const base = ids(N, 50000);
const near = [...base];
for (let i = 0; i < 30; i++) {
  const at = Math.floor(random.next() * near.length);
  if (random.next() < 0.5) near.splice(at, 1 + Math.floor(random.next() * 20));
  else near.splice(at, 0, ...ids(1 + Math.floor(random.next() * 20), 50000));
}
const cases: Record<string, [number[], number[]]> = {
  near_identical: [base, near],
  unrelated: [base, ids(N, 50000)],
  unrelated_small_vocab: [ids(N, 20), ids(N, 20)],
};

const out: Record<string, unknown> = { tokens: N, edit_cap: TOKEN_ALIGNMENT_EDIT_CAP };
for (const [name, [a, b]] of Object.entries(cases)) {
  const times: number[] = [];
  const answerTimes: number[] = [];
  let fellBack = false;
  let matched = 0;
  let bytes = 0;
  // Five per-token series per side, as the sample diff answers them.
  const series = (n: number) => Array.from({ length: n }, () => random.next() - 0.5);
  const [sa, sb] = [series(a.length), series(b.length)];
  for (let k = 0; k < 5; k++) {
    const t = performance.now();
    const al = alignTokens(a, b);
    times.push(performance.now() - t);
    const laid = Array.from({ length: 5 }, () => alignSeries(al, sa, sb));
    bytes = JSON.stringify({ alignment: al, series: laid }).length;
    answerTimes.push(performance.now() - t);
    fellBack = al.fell_back;
    matched = al.matched;
  }
  const median = (xs: number[]) => Math.round(xs.sort((x, y) => x - y)[2]! * 10) / 10;
  out[name] = { align_ms: median(times), with_series_json_ms: median(answerTimes), json_bytes: bytes, fell_back: fellBack, matched };
}
out.loadavg = loadavg()[0];
console.log(JSON.stringify(out));
