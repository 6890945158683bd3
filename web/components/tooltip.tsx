// One floating tooltip for the whole app, positioned next to the cursor and kept inside the viewport.
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';
import { route } from '../route.ts';
import { store, useStore } from '../store.ts';

interface Tip {
  x: number;
  y: number;
  lines: string[];
}

const tip = store<Tip | null>(null);

export function showTip(x: number, y: number, lines: string[]): void {
  tip.set({ x, y, lines });
}

export function hideTip(): void {
  tip.set(null);
}

export function Tooltip() {
  const t = useStore(tip);
  const ref = useRef<HTMLDivElement>(null);
  // A new screen unmounts what the tip described without a mouseleave (Back, a key, a link): it goes too.
  useEffect(() => route.subscribe(hideTip), []);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el || !t) return;
    const r = el.getBoundingClientRect();
    let x = t.x + 14;
    let y = t.y + 14;
    if (x + r.width > innerWidth - 4) x = t.x - r.width - 14;
    if (y + r.height > innerHeight - 4) y = Math.max(4, t.y - r.height - 14);
    el.style.left = `${Math.max(4, x)}px`;
    el.style.top = `${y}px`;
  });
  if (!t) return null;
  return (
    <div ref={ref} class="tooltip" role="tooltip" data-testid="tooltip">
      {t.lines.map((l, i) => (
        <div key={i} class={i === 0 ? 'tip-head' : ''}>
          {l}
        </div>
      ))}
    </div>
  );
}
