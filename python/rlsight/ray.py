"""One GPU sampler per alive GPU node of a Ray cluster, placed as a Ray actor (``num_cpus=0``, hard
node affinity), reconciled as nodes join or die, stopped with the client.

    import rlsight, rlsight.ray
    client = rlsight.connect(dump_details=DIR)
    rlsight.ray.start_gpu_samplers(client)

Only Ray's public API is used: ``ray.nodes``, ``ray.remote`` options,
``NodeAffinitySchedulingStrategy`` and ``ray.kill``. The collector must be reachable from every
node (``rlsight collect --listen 0.0.0.0:PORT``).
"""

import logging
import threading

logger = logging.getLogger("rlsight.ray")

RECONCILE_INTERVAL_SECONDS = 10.0


class _SamplerActor:
    """Runs on one GPU node: its own client to the collector and a GpuSampler."""

    def __init__(self, address, token, node, interval, dashboard_dir=None):
        from .client import Client
        from .gpu_sampler import GpuSampler

        # with the run's dashboard dir (a file system the nodes share) the actor finds a collector that started
        # after it, or restarted with a new address and token, as the trainer's client does
        self.client = Client(address, token, node=node, dashboard_dir=dashboard_dir)
        self.sampler = GpuSampler(self.client.gpu_samples, node=node, interval=interval, push_processes=self.client.gpu_processes)

    def start(self):
        return self.sampler.start()

    def stop(self):
        self.sampler.stop()
        self.client.close(timeout=5.0)
        return True


def _alive_gpu_nodes(ray):
    out = {}
    for n in ray.nodes():
        if n.get("Alive") and (n.get("Resources") or {}).get("GPU", 0) > 0:
            out[n["NodeID"]] = n["NodeManagerAddress"]
    return out


class GpuSamplerFleet:
    def __init__(self, client, interval=1.0, reconcile_interval=RECONCILE_INTERVAL_SECONDS):
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._ray = ray
        self._affinity = NodeAffinitySchedulingStrategy
        self._client = client
        self._interval = interval
        self._reconcile_interval = reconcile_interval
        self._actor_class = ray.remote(num_cpus=0)(_SamplerActor)
        #: NodeID → actor handle, or None when that node has no GPU telemetry (not retried)
        self.samplers = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def reconcile(self):
        """Forgets samplers of vanished nodes, places one on every new alive GPU node."""
        ray = self._ray
        with self._lock:
            alive = _alive_gpu_nodes(ray)
            for node_id in [n for n in self.samplers if n not in alive]:
                handle = self.samplers.pop(node_id)
                if handle is not None:
                    try:
                        ray.kill(handle)
                    except Exception:
                        pass
            for node_id, ip in alive.items():
                if node_id in self.samplers:
                    continue
                strategy = self._affinity(node_id=node_id, soft=False)
                handle = self._actor_class.options(scheduling_strategy=strategy).remote(
                    self._client.address, self._client.token, ip, self._interval, getattr(self._client, "dashboard_dir", None))
                try:
                    started = ray.get(handle.start.remote())
                except Exception as err:
                    logger.warning("GPU sampler on %s failed to start (%s)", ip, err)
                    started = False
                if not started:
                    try:
                        ray.kill(handle)
                    except Exception:
                        pass
                self.samplers[node_id] = handle if started else None

    def _loop(self):
        while not self._stop.wait(self._reconcile_interval):
            try:
                self.reconcile()
            except Exception as err:
                logger.warning("GPU sampler reconcile failed (%s); retrying", err)

    def start(self):
        self.reconcile()
        self._thread = threading.Thread(target=self._loop, name="rlsight-ray-reconcile", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        with self._lock:
            for handle in self.samplers.values():
                if handle is None:
                    continue
                try:
                    self._ray.get(handle.stop.remote(), timeout=10)
                except Exception:
                    pass
                try:
                    self._ray.kill(handle)
                except Exception:
                    pass
            self.samplers.clear()


def start_gpu_samplers(client, interval=1.0, reconcile_interval=RECONCILE_INTERVAL_SECONDS):
    """Places a sampler on every alive GPU node now and as nodes join; ``client.close()`` stops them."""
    fleet = GpuSamplerFleet(client, interval, reconcile_interval).start()
    client.add_close_hook(fleet.stop)
    return fleet
