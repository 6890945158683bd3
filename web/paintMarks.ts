// Performance marks for "first paint with data" per view, read by the browser benchmark (bench/web.ts).
const marked = new Set<string>();

export function markPainted(view: string): void {
  if (marked.has(view)) return;
  marked.add(view);
  // After this frame is composited, not merely when the draw call returned.
  requestAnimationFrame(() => performance.mark(`rlsight:painted:${view}`));
}
