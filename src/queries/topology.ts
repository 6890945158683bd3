// The engine topology over time and the lanes it is drawn on.
import type { LaneEntry, TopologyWindow } from '../run/telemetry/records.ts';
import type { Topology } from '../wire/timeline.ts';

/** `{lanes: [{node, gpu, index, ranks, roles}], windows: [{t0, t1, engines}]}` (lanes in cluster order); snapshot N holds until N+1, the last until `null`. */
export function topology(store: { laneIndex(): readonly LaneEntry[]; topologyWindows(): TopologyWindow[] }): Topology {
  return {
    lanes: store.laneIndex().map((l) => ({ node: l.node, gpu: l.gpu, index: l.index, ranks: l.ranks, roles: l.roles })),
    windows: store.topologyWindows(),
  };
}
