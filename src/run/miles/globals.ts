// The globals a miles dump (a rollout dump or a rank file) may name; any other is refused where it is first
// named, so a file that calls os.system or builtins.eval is damage, not data with odd fields.
import { checkpointGlobal } from '../../formats/torch/globals.ts';

/** A checkpoint's globals, and the classes of miles (and of slime, which it grew from), recorded inertly. */
const MILES_GLOBALS = [/^miles\.[\w.]+$/, /^slime\.[\w.]+$/];

export function milesGlobal(name: string): boolean {
  return checkpointGlobal(name, MILES_GLOBALS);
}
