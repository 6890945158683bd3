// A full collection on this thread, for tests that check what a thread lets go of.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
/** Collects this thread's garbage now. */
export const collectGarbage = runInNewContext('gc') as () => void;

/**
 * `measure()` (collecting here first each time) until it is below `bytes`, for up to `ms`: buffers are freed by a
 * sweep that may end a moment after the collection. Returns the last measure.
 */
export async function settlesBelow(measure: () => number | Promise<number>, bytes: number, ms = 2000): Promise<number> {
  const deadline = performance.now() + ms;
  for (;;) {
    collectGarbage();
    const held = await measure();
    if (held < bytes || performance.now() >= deadline) return held;
    await new Promise((r) => setTimeout(r, 50));
  }
}
