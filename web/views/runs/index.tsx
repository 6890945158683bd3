// Runs table (`#/runs`): one row per served run.
import type { Route } from '../../route.ts';

export function RunsView(_: { route: Route }) {
  return null;
}
