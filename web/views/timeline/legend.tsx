// Legend for the lane view: every phase present (fixed colours), the lines, and the overlay's scale.
import { fmtNum } from '../../format.ts';
import { IDLE_PHASES, LIFECYCLE_COLORS, MEM_COLOR, OVERLAY_COLOR, phaseColor, PHASE_ORDER, UTIL_COLOR } from '../../theme.ts';

export function Legend({ phases, overlay, overlayMax, memMaxMb, showMem, lifecycle }: { phases: string[]; overlay: string | null; overlayMax: number; memMaxMb: number; showMem: boolean; lifecycle: boolean }) {
  const ordered = [...phases].sort((a, b) => {
    const ia = PHASE_ORDER.indexOf(a);
    const ib = PHASE_ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  return (
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
  );
}
