// Global keys: `/` focuses search, j/k next/previous, WASD zoom/pan, Esc reset. Views register what the keys mean.
import { useEffect } from 'preact/hooks';

export type KeyAction = 'next' | 'prev' | 'zoomIn' | 'zoomOut' | 'panLeft' | 'panRight' | 'reset';
type Handlers = Partial<Record<KeyAction, () => void>>;

const stack: Handlers[] = [];

const KEYMAP: Record<string, KeyAction> = {
  j: 'next',
  k: 'prev',
  w: 'zoomIn',
  s: 'zoomOut',
  a: 'panLeft',
  d: 'panRight',
  Escape: 'reset',
};

function isTyping(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || (el as HTMLElement).isContentEditable;
}

export function installKeyboard(): void {
  window.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const active = document.activeElement;
    if (isTyping(active)) {
      if (e.key === 'Escape') (active as HTMLElement).blur();
      return;
    }
    if (e.key === '/') {
      // The header's run-wide search comes first in the page, so `/` focuses it; views' own filters are clicked.
      const search = document.querySelector<HTMLInputElement>('[data-global-search], [data-search]');
      if (search) {
        e.preventDefault();
        search.focus();
        search.select();
      }
      return;
    }
    const action = KEYMAP[e.key.length === 1 ? e.key.toLowerCase() : e.key];
    if (!action) return;
    for (let i = stack.length - 1; i >= 0; i--) {
      const fn = stack[i]![action];
      if (fn) {
        e.preventDefault();
        fn();
        return;
      }
    }
  });
}

/** Binds key actions while the calling component is mounted; the latest handlers always win. */
export function useKeys(handlers: Handlers): void {
  useEffect(() => {
    stack.push(handlers);
    return () => {
      const i = stack.lastIndexOf(handlers);
      if (i >= 0) stack.splice(i, 1);
    };
  });
}
