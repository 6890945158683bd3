// A box that scrolls sideways (a table wider than the window) and says so: a bar above it counts the columns
// cut off on either side, with buttons that scroll to them, and the box keeps a visible scrollbar. Columns cut
// at the right edge also fade out there (`data-more-right`), so a number cut in half is not read as a value.
import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';

interface Hidden {
  /** Whether the content is wider than the box at all. */
  wide: boolean;
  /** Columns (header cells of the table's last header row) cut off on the left and on the right. */
  left: number;
  right: number;
}

const NONE: Hidden = { wide: false, left: 0, right: 0 };

/** The header cells of the box's table that are not wholly in view; cells that stay in place (sticky) never count. */
export function hiddenColumns(box: HTMLElement): Hidden {
  const wide = box.scrollWidth > box.clientWidth + 1;
  if (!wide) return NONE;
  const rows = box.querySelectorAll('thead tr');
  const cells = [...(rows[rows.length - 1]?.children ?? [])] as HTMLElement[];
  const outer = box.getBoundingClientRect();
  const visibleRight = outer.left + box.clientLeft + box.clientWidth;
  // sticky cells cover the left edge: a column passing under them is out of view
  let visibleLeft = outer.left + box.clientLeft;
  const scrolled = cells.filter((c) => getComputedStyle(c).position !== 'sticky');
  for (const c of cells) if (!scrolled.includes(c)) visibleLeft = Math.max(visibleLeft, c.getBoundingClientRect().right);
  let left = 0;
  let right = 0;
  for (const c of scrolled) {
    const r = c.getBoundingClientRect();
    if (r.right > visibleRight + 1) right++;
    else if (r.left < visibleLeft - 1) left++;
  }
  return { wide, left, right };
}

export function SideScroll({ class: cls, children, label = 'columns' }: { class: string; children: ComponentChildren; label?: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [hidden, setHidden] = useState<Hidden>(NONE);
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const mark = () => {
      el.dataset.moreRight = String(el.scrollLeft + el.clientWidth < el.scrollWidth - 1);
      const h = hiddenColumns(el);
      setHidden((old) => (old.wide === h.wide && old.left === h.left && old.right === h.right ? old : h));
    };
    el.addEventListener('scroll', mark, { passive: true });
    const seen = new ResizeObserver(mark);
    seen.observe(el);
    if (el.firstElementChild) seen.observe(el.firstElementChild);
    // columns added or removed (a column chooser, rows arriving) change the count without resizing the box
    const changed = new MutationObserver(mark);
    changed.observe(el, { childList: true, subtree: true });
    mark();
    return () => {
      el.removeEventListener('scroll', mark);
      seen.disconnect();
      changed.disconnect();
    };
  }, []);
  const by = (dir: 1 | -1) => {
    const el = box.current;
    if (el) el.scrollBy({ left: dir * Math.max(120, el.clientWidth * 0.7), behavior: 'smooth' });
  };
  const plural = (n: number) => (n === 1 ? label.replace(/s$/, '') : label);
  return (
    <div class="side-scroll">
      {hidden.wide && (
        <div class="side-scroll-cue" data-testid="side-scroll-cue" data-left={hidden.left} data-right={hidden.right}>
          <button type="button" hidden={hidden.left === 0} onClick={() => by(-1)} title="scroll the table to the left (or Shift + wheel)">
            ← {hidden.left} {plural(hidden.left)}
          </button>
          <span class="hint">the table scrolls sideways</span>
          <button type="button" hidden={hidden.right === 0} onClick={() => by(1)} title="scroll the table to the right (or Shift + wheel)">
            {hidden.right} more {plural(hidden.right)} →
          </button>
        </div>
      )}
      <div class={`${cls} side-scroll-box`} ref={box}>
        {children}
      </div>
    </div>
  );
}
