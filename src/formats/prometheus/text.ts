// The Prometheus text exposition format (0.0.4), and the OpenMetrics text it overlaps with: every
// sample line as (name, labels, value). Histogram and summary parts (`_bucket`, `_sum`, `_count`)
// and counter `_total` samples keep their own names; exposition timestamps and exemplars are read
// past and dropped.

export interface PromSample {
  name: string;
  /** Label pairs in exposition order (escapes resolved). */
  labels: Record<string, string>;
  value: number;
}

export interface PromExposition {
  samples: PromSample[];
  /** `# TYPE` per family name. */
  types: Map<string, string>;
  /** `# HELP` per family name (escapes resolved). */
  help: Map<string, string>;
}

export class PromParseError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`line ${line}: ${message}`);
  }
}

const NAME = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;
const LABEL_NAME = /[a-zA-Z_][a-zA-Z0-9_]*/y;
const FLOAT = /^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)$/;
const SPECIAL: Record<string, number> = { nan: NaN, inf: Infinity, '+inf': Infinity, '-inf': -Infinity, infinity: Infinity, '+infinity': Infinity, '-infinity': -Infinity };

/** A sample value as Go's ParseFloat reads it: decimals, exponents, NaN and ±Inf in any case. */
export function parsePromValue(text: string): number | null {
  const special = SPECIAL[text.toLowerCase()];
  if (special !== undefined) return special;
  if (!FLOAT.test(text)) return null;
  return Number(text);
}

/** `\\`, `\"` and `\n` inside a quoted label value or a HELP text. */
function unescape(s: string, quoted: boolean): string {
  if (!s.includes('\\')) return s;
  return s.replace(/\\(.)/g, (m, c: string) => (c === 'n' ? '\n' : c === '\\' ? '\\' : c === '"' && quoted ? '"' : m));
}

/** Parses a whole exposition; throws `PromParseError` naming the first bad line. */
export function parsePromText(text: string): PromExposition {
  const out: PromExposition = { samples: [], types: new Map(), help: new Map() };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    let line = lines[i];
    if (line.endsWith('\r')) line = line.slice(0, -1);
    const trimmed = line.trim();
    if (trimmed === '') continue;
    if (trimmed.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE|EOF)(?:\s+(\S+)(?:\s(.*))?)?$/.exec(trimmed);
      if (m === null) continue; // a plain comment
      if (m[1] === 'EOF') break; // OpenMetrics: nothing follows
      if (m[2] === undefined) continue;
      if (m[1] === 'TYPE') out.types.set(m[2], (m[3] ?? '').trim());
      else out.help.set(m[2], unescape(m[3] ?? '', false));
      continue;
    }
    out.samples.push(parseSampleLine(line, lineNo));
  }
  return out;
}

function parseSampleLine(line: string, lineNo: number): PromSample {
  let at = 0;
  while (line[at] === ' ' || line[at] === '\t') at++;
  NAME.lastIndex = at;
  const nm = NAME.exec(line);
  if (nm === null) throw new PromParseError(lineNo, `expected a metric name at column ${at + 1}`);
  const name = nm[0];
  at = NAME.lastIndex;
  const labels: Record<string, string> = {};
  while (line[at] === ' ' || line[at] === '\t') at++;
  if (line[at] === '{') {
    at++;
    for (;;) {
      while (line[at] === ' ' || line[at] === '\t') at++;
      if (line[at] === '}') {
        at++;
        break;
      }
      LABEL_NAME.lastIndex = at;
      const ln = LABEL_NAME.exec(line);
      if (ln === null) throw new PromParseError(lineNo, `expected a label name at column ${at + 1}`);
      at = LABEL_NAME.lastIndex;
      while (line[at] === ' ' || line[at] === '\t') at++;
      if (line[at] !== '=') throw new PromParseError(lineNo, `expected '=' after label ${ln[0]}`);
      at++;
      while (line[at] === ' ' || line[at] === '\t') at++;
      if (line[at] !== '"') throw new PromParseError(lineNo, `expected a quoted value for label ${ln[0]}`);
      const start = ++at;
      while (at < line.length && line[at] !== '"') at += line[at] === '\\' ? 2 : 1;
      if (at >= line.length) throw new PromParseError(lineNo, `unterminated value of label ${ln[0]}`);
      if (Object.hasOwn(labels, ln[0])) throw new PromParseError(lineNo, `label ${ln[0]} given twice`);
      Object.defineProperty(labels, ln[0], { value: unescape(line.slice(start, at), true), enumerable: true, writable: true, configurable: true });
      at++;
      while (line[at] === ' ' || line[at] === '\t') at++;
      if (line[at] === ',') at++;
      else if (line[at] !== '}') throw new PromParseError(lineNo, `expected ',' or '}' after label ${ln[0]}`);
    }
  }
  // value [timestamp] [# exemplar]
  let rest = line.slice(at);
  const exemplar = rest.indexOf(' # ');
  if (exemplar >= 0) rest = rest.slice(0, exemplar);
  const fields = rest.trim().split(/[ \t]+/);
  if (fields.length === 0 || fields[0] === '') throw new PromParseError(lineNo, `sample ${name} has no value`);
  if (fields.length > 2) throw new PromParseError(lineNo, `unexpected text after the value of ${name}`);
  const value = parsePromValue(fields[0]);
  if (value === null) throw new PromParseError(lineNo, `bad value '${fields[0]}' for ${name}`);
  if (fields.length === 2 && parsePromValue(fields[1]) === null) throw new PromParseError(lineNo, `bad timestamp '${fields[1]}' for ${name}`);
  return { name, labels, value };
}
