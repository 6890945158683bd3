// The typed answers of the HTTP API: the queries return them, the server serves them, the app reads them.
// Types only: nothing here runs, so the app may import it without pulling server code into its bundle.
export type * from './answers.ts';
export type * from './events.ts';
export type * from './meta.ts';
export type * from './metrics.ts';
export type * from './rollout.ts';
export type * from './runs.ts';
export type * from './timeline.ts';
export type * from './trace.ts';
