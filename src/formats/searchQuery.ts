// The search query grammar, read alike by the server's search (src/queries/search.ts) and by the app, which
// highlights in a sample what a query matched (web/views/sample/findTerms.ts): `/regular expression/flags`,
// `step:sample`, a sample index, or words and "exact phrases", the last word still being typed (a prefix) unless
// the text ends with a space or a quote. Pure, no imports: the app runs it in the browser.

export type QueryTerms =
  | { kind: 'empty' }
  | { kind: 'regex'; source: string; flags: string }
  | { kind: 'step_sample'; step: number; sample: number }
  | { kind: 'sample'; sample: number }
  /** Words and phrases lowercased, in the order given (repeats kept); `open`: the last word is a prefix. */
  | { kind: 'text'; words: string[]; phrases: string[]; open: boolean };

/** Reads a query as it was typed (a trailing space or quote closes its last word). */
export function queryTerms(raw: string): QueryTerms {
  const q = raw.trim();
  if (q === '') return { kind: 'empty' };
  const re = /^\/(.+)\/([a-z]*)$/s.exec(q);
  if (re) return { kind: 'regex', source: re[1]!, flags: re[2]! };
  const ss = /^(\d+):(\d+)$/.exec(q);
  if (ss) return { kind: 'step_sample', step: Number(ss[1]), sample: Number(ss[2]) };
  if (/^\d+$/.test(q)) return { kind: 'sample', sample: Number(q) };
  return textTerms(raw);
}

/** `raw` as words and phrases, whatever it looks like (a number too). */
export function textTerms(raw: string): Extract<QueryTerms, { kind: 'text' }> {
  const phrases: string[] = [];
  const rest = raw.trim().replace(/"([^"]*)"?/g, (_, p: string) => {
    if (p.trim()) phrases.push(p.toLowerCase());
    return ' ';
  });
  const words = rest.toLowerCase().split(/\s+/).filter(Boolean);
  return { kind: 'text', words, phrases, open: words.length > 0 && !/[\s"]$/.test(raw) };
}
