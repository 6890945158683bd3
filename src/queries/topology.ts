// The engine topology over time and the lanes it is drawn on.
import type { LaneEntry, TopologyWindow } from '../run/model.ts';
import type { Topology } from '../wire/timeline.ts';


/** `{lanes: [{node, gpu, index}], windows: [{t0, t1, engines}]}`; snapshot N holds until N+1, the last until `null`. */
export function topology(store: { laneIndex(): readonly LaneEntry[]; topologyWindows(): TopologyWindow[] }): Topology {
  return {
    lanes: store.laneIndex().map((l) => ({ node: l.node, gpu: l.gpu, index: l.index })),
    windows: store.topologyWindows(),
  };
}
