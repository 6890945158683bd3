// Where everything of a demo run lives: GPU nodes, sglang engines, and Megatron train ranks.

export interface TrainParallelism {
  tp: number;
  pp: number;
  cp: number;
  dp: number;
}

export interface EngineSlot {
  engineRank: number;
  node: string;
  gpus: number[];
  port: number;
}

export interface ClusterLayout {
  nodes: string[];
  gpusPerNode: number;
  /** The CPU-only head node running the driver and the rollout manager. */
  managerNode: string;
  engineTp: number;
  /** DP-attention ranks inside each engine (the `dp_rank` label of its metrics). */
  engineDp: number;
  engines: EngineSlot[];
  train: TrainParallelism;
}

export interface RankCoords {
  tp: number;
  cp: number;
  dp: number;
  pp: number;
}

export function planCluster(nodeCount: number, gpusPerNode: number, engineTp: number, train: Omit<TrainParallelism, 'dp'>, engineDp = 2): ClusterLayout {
  const nodes = Array.from({ length: nodeCount }, (_, i) => `10.0.1.${i + 1}`);
  const world = nodeCount * gpusPerNode;
  const modelParallel = train.tp * train.pp * train.cp;
  if (world % modelParallel !== 0) throw new RangeError(`world size ${world} is not divisible by tp*pp*cp=${modelParallel}`);
  const engines: EngineSlot[] = [];
  for (const node of nodes) {
    for (let g = 0; g < gpusPerNode; g += engineTp) {
      engines.push({ engineRank: engines.length, node, gpus: Array.from({ length: engineTp }, (_, i) => g + i), port: 15000 + g });
    }
  }
  return { nodes, gpusPerNode, managerNode: '10.0.0.2', engineTp, engineDp, engines, train: { ...train, dp: world / modelParallel } };
}

export function worldSize(layout: ClusterLayout): number {
  return layout.nodes.length * layout.gpusPerNode;
}

/** Megatron's default rank order (tp fastest, then cp, dp, pp). */
export function rankCoords(layout: ClusterLayout, rank: number): RankCoords {
  const { tp, cp, dp } = layout.train;
  return { tp: rank % tp, cp: Math.floor(rank / tp) % cp, dp: Math.floor(rank / (tp * cp)) % dp, pp: Math.floor(rank / (tp * cp * dp)) };
}

export function rankPlacement(layout: ClusterLayout, rank: number): { node: string; gpu: number } {
  return { node: layout.nodes[Math.floor(rank / layout.gpusPerNode)], gpu: rank % layout.gpusPerNode };
}

export function engineAddr(slot: EngineSlot, port = slot.port): string {
  return `http://${slot.node}:${port}`;
}
