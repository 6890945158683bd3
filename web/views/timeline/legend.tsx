// Legend for the lane view: every phase present (fixed colours), the lines, and the overlay's scale, with the
// engines whose overlay series no lane draws.
import { fmtNum } from '../../format.ts';
import { IDLE_PHASES, LIFECYCLE_COLORS, MEM_COLOR, OVERLAY_COLOR, phaseColor, PHASE_ORDER, UTIL_COLOR } from '../../theme.ts';
import { UNPLACED_WHY, type UnplacedReason } from './layers/engineOverlay.ts';

/** Addresses named per reason; the rest are counted. */
const UNPLACED_SHOWN = 4;

export function Legend({
  phases,
  overlay,
  overlayMax,
  unplaced,
  memMaxMb,
  showMem,
  lifecycle,
}: {
  phases: string[];
  overlay: string | null;
  overlayMax: number;
  /** Engines of the overlay's series drawn on no lane, and why. */
  unplaced: { addr: string; why: UnplacedReason }[];
  memMaxMb: number;
  showMem: boolean;
  lifecycle: boolean;
}) {
  const ordered = [...phases].sort((a, b) => {
    const ia = PHASE_ORDER.indexOf(a);
    const ib = PHASE_ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  const byWhy = new Map<UnplacedReason, string[]>();
  for (const u of overlay ? unplaced : []) byWhy.set(u.why, [...(byWhy.get(u.why) ?? []), u.addr]);
  return (
    <>
      <div class="legend" data-testid="legend">
        {ordered.map((n) => (
          <span key={n} data-phase={n}>
            {/* Idle phases are hatched in the lanes, so their swatch is too. */}
            <i class={`swatch${IDLE_PHASES.has(n) ? ' hatched' : ''}`} style={{ backgroundColor: phaseColor(n) }} />
            {n}
          </span>
        ))}
        <span>
          <i class="swatch" style={{ background: UTIL_COLOR, height: '3px' }} />
          GPU util (0–100%)
        </span>
        {showMem && (
          <span>
            <i class="swatch line dashed" style={{ borderTopColor: MEM_COLOR }} />
            memory (0–{(memMaxMb / 1024).toFixed(0)} GB)
          </span>
        )}
        {overlay && (
          <span>
            <i class="swatch" style={{ background: OVERLAY_COLOR, height: '3px' }} />
            {overlay} (0–{fmtNum(overlayMax)})
          </span>
        )}
        {lifecycle &&
          Object.entries(LIFECYCLE_COLORS).map(([k, c]) => (
            <span key={k} data-request-state={k}>
              <i class="swatch request" style={{ backgroundColor: c }} />
              request {k.replace('_', ' ')}
            </span>
          ))}
      </div>
      {byWhy.size > 0 && (
        // The scale above counts these series too, yet no lane carries a line of them.
        <p class="hint" data-testid="overlay-unplaced" style={{ margin: '4px 0 0' }}>
          engine series not placed on any lane:{' '}
          {[...byWhy]
            .map(([why, addrs]) => `${addrs.slice(0, UNPLACED_SHOWN).join(', ')}${addrs.length > UNPLACED_SHOWN ? ` and ${addrs.length - UNPLACED_SHOWN} more` : ''} (${UNPLACED_WHY[why]})`)
            .join('; ')}
        </p>
      )}
    </>
  );
}
