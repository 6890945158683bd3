// The runs a diff can pick from.
import { useEffect } from 'preact/hooks';
import type { RunListing } from '../../../src/wire/index.ts';
import { loadRuns, runList } from '../../runs.ts';
import { useStore } from '../../store.ts';

/** The served runs when there are several (a single-run server shows no run picker), else null. */
export function useServedRuns(): RunListing[] | null {
  const all = useStore(runList);
  useEffect(() => void loadRuns(), []);
  return all && all.length > 1 ? all : null;
}
