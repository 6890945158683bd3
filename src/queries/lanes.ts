// The lane-selection grammar (`rank:0-3, g:8, node:10.0.0.1, gpu:10.0.0.1:3, engine:15004, every:8,
// role:train`): a union of terms resolved against the lane index.
import type { LaneEntry } from '../run/model.ts';
import { BadArgument } from './limits.ts';
import { pyStrRepr } from '../formats/pythonFormat.ts';

/** One parsed term of a lane selection. */
export type LaneTerm =
  | { kind: 'rank'; lo: number; hi: number }
  | { kind: 'g'; lo: number; hi: number }
  | { kind: 'node'; node: string }
  | { kind: 'gpu'; node: string; gpu: number }
  | { kind: 'engine'; substr: string }
  | { kind: 'every'; stride: number }
  | { kind: 'role'; role: 'train' | 'rollout' };

/** Selected lanes as `"<node>:<gpu>"` keys; `null` means every lane. */
export type LaneSelection = ReadonlySet<string> | null;

const PARAM = 'lanes';

/** Python `int(text)`: surrounding whitespace, a sign and `_` digit separators allowed. */
function pyInt(text: string): number {
  const t = text.replace(/^[\s]+|[\s]+$/g, '');
  if (!/^[+-]?\d+(_\d+)*$/.test(t)) throw new BadArgument(PARAM, `invalid literal for int() with base 10: ${pyStrRepr(text)}`);
  return Number(t.replace(/_/g, ''));
}

/**
 * `A` or `A-B` (split at the first `-`). The reference reads `5-` as `5` and `5-3` as nothing; a
 * strict parse (rlsight's own endpoint, which the app validates with) refuses both, since neither
 * can mean what was typed.
 */
function pyRange(value: string, token: string, strict: boolean): [number, number] {
  const at = value.indexOf('-');
  const a = at < 0 ? value : value.slice(0, at);
  const b = at < 0 ? '' : value.slice(at + 1);
  const lo = pyInt(a);
  if (at < 0) return [lo, lo];
  if (!strict) return [lo, b ? pyInt(b) : lo];
  if (b.trim() === '') throw new BadArgument(PARAM, `bad lane selector '${token}': the range has no end (write ${lo} or ${lo}-<last>)`);
  const hi = pyInt(b);
  if (hi < lo) throw new BadArgument(PARAM, `bad lane selector '${token}': the range runs backwards (write ${hi}-${lo})`);
  return [lo, hi];
}

/**
 * Parses a lane selection. `null`, blank and `all` select every lane (returns null). Otherwise the
 * comma-separated terms (whitespace stripped, empty ones skipped) are each `kind:value`, split at the
 * first colon. Throws a 400 `BadArgument` on `lanes` with the reference's messages; `strict` also
 * refuses ranges without an end or running backwards.
 */
export function laneGrammar(text: string | null | undefined, strict = false): LaneTerm[] | null {
  if (text == null) return null;
  const whole = text.trim();
  if (whole === '' || whole === 'all') return null;
  const terms: LaneTerm[] = [];
  for (const raw of text.split(',')) {
    const token = raw.trim();
    if (token === '') continue;
    const at = token.indexOf(':');
    const kind = at < 0 ? token : token.slice(0, at);
    const value = at < 0 ? '' : token.slice(at + 1);
    if (value === '') throw new BadArgument(PARAM, `bad lane selector '${token}': expected kind:value`);
    switch (kind) {
      case 'rank':
      case 'g': {
        const [lo, hi] = pyRange(value, token, strict);
        terms.push({ kind, lo, hi });
        break;
      }
      case 'node':
        terms.push({ kind: 'node', node: value });
        break;
      case 'gpu': {
        const cut = value.lastIndexOf(':');
        const node = cut < 0 ? '' : value.slice(0, cut);
        if (node === '') throw new BadArgument(PARAM, `bad lane selector '${token}': expected gpu:<node>:<index>`);
        terms.push({ kind: 'gpu', node, gpu: pyInt(value.slice(cut + 1)) });
        break;
      }
      case 'engine':
        terms.push({ kind: 'engine', substr: value });
        break;
      case 'every': {
        const stride = pyInt(value);
        if (stride <= 0) throw new BadArgument(PARAM, `bad lane selector '${token}': stride must be positive`);
        terms.push({ kind: 'every', stride });
        break;
      }
      case 'role':
        if (value !== 'train' && value !== 'rollout') throw new BadArgument(PARAM, `bad lane selector '${token}': role must be train or rollout`);
        terms.push({ kind: 'role', role: value });
        break;
      default:
        throw new BadArgument(PARAM, `unknown lane selector kind '${kind}' in '${token}'`);
    }
  }
  return terms;
}

/**
 * The lanes a selection picks out of the lane index: the union of its terms (`null` = all lanes).
 * A valid term matching nothing adds nothing; `gpu:` terms name a lane even if it is unknown.
 */
export function resolveLanes(text: string | null | undefined, laneIndex: readonly LaneEntry[], strict = false): LaneSelection {
  const terms = laneGrammar(text, strict);
  if (terms === null) return null;
  const out = new Set<string>();
  for (const t of terms) {
    if (t.kind === 'gpu') {
      out.add(`${t.node}:${t.gpu}`);
      continue;
    }
    for (const lane of laneIndex) {
      if (laneMatches(t, lane)) out.add(`${lane.node}:${lane.gpu}`);
    }
  }
  return out;
}

function laneMatches(t: Exclude<LaneTerm, { kind: 'gpu' }>, lane: LaneEntry): boolean {
  switch (t.kind) {
    case 'rank':
      return lane.ranks.some((r) => r >= t.lo && r <= t.hi);
    case 'g':
      return lane.index >= t.lo && lane.index <= t.hi;
    case 'node':
      return lane.node === t.node;
    case 'engine':
      return lane.engine_addrs.some((a) => a.includes(t.substr));
    case 'every':
      return lane.index % t.stride === 0;
    case 'role':
      return lane.roles.includes(t.role);
  }
}

/**
 * The lane keys worth reading cold hours selectively for (`gpuUtilBlocks(t0, t1, keys)`): a selection
 * of at most a quarter of the lanes. Larger ones read whole hours, which every later selection reuses.
 */
export function selectiveLaneKeys(sel: LaneSelection, laneCount: number): string[] | null {
  return sel !== null && sel.size * 4 <= laneCount ? [...sel] : null;
}

/** The lane-index entries a selection picks, in index order (every lane for no selection or `all`); parsed strictly. */
export function selectedLanes(text: string | null | undefined, laneIndex: readonly LaneEntry[]): LaneEntry[] {
  const sel = resolveLanes(text, laneIndex, true);
  return sel === null ? [...laneIndex] : laneIndex.filter((l) => sel.has(`${l.node}:${l.gpu}`));
}
