// Global keys: `/` focuses search, j/k next/previous, WASD zoom/pan, Esc reset. Views register what the keys mean.
// The single-letter keys can be turned off (WCAG 2.1.4: speech input that types words into the page would
// trigger them); the choice is kept in localStorage.
import { useEffect } from 'preact/hooks';
import { store } from './store.ts';

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

const LETTERS_KEY = 'rlsight.letterKeys';

/** Whether j/k/w/a/s/d act (on unless turned off in this browser). */
export const letterKeys = store<boolean>(readLetterKeys());

function readLetterKeys(): boolean {
  try {
    return localStorage.getItem(LETTERS_KEY) !== 'off';
  } catch {
    // storage refused (a privacy setting): the keys stay on, as they are by default
    return true;
  }
}

export function setLetterKeys(on: boolean): void {
  letterKeys.set(on);
  try {
    localStorage.setItem(LETTERS_KEY, on ? 'on' : 'off');
  } catch {
    // storage refused: the choice holds for this page only
  }
}

/** The action a key press means: none for a single letter while the letter keys are off. */
export function keyAction(key: string, letters: boolean): KeyAction | null {
  if (key.length === 1 && !letters) return null;
  return KEYMAP[key.length === 1 ? key.toLowerCase() : key] ?? null;
}

function isTyping(el: Element | null): boolean {
  if (!el) return false;
  const tag = el.tagName;
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || (el as HTMLElement).isContentEditable;
}

export function installKeyboard(): void {
  window.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const active = document.activeElement;
    // Keys typed into a field are the field's own (Esc in the header search closes its results and keeps focus there).
    if (isTyping(active)) return;
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
    const action = keyAction(e.key, letterKeys.get());
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
