"""One GPU sampler per alive GPU node of a Ray cluster, placed as a Ray actor (``num_cpus=0``, hard
node affinity), reconciled as nodes join or die, stopped with the client.

    import rlsight, rlsight.ray
    client = rlsight.connect(dump_details=DIR)
    rlsight.ray.start_gpu_samplers(client)

Only Ray's public API is used: ``ray.nodes``, ``ray.remote`` options,
``NodeAffinitySchedulingStrategy``, ``ray.wait``, ``ray.get`` and ``ray.kill``. The collector must be reachable from every
node (``rlsight collect --listen 0.0.0.0:PORT``).
"""

import logging
import threading
import time

logger = logging.getLogger("rlsight.ray")

RECONCILE_INTERVAL_SECONDS = 10.0
# the actors placed in one reconcile are waited for together this long; one not started by then (a node draining, its
# runtime_env still being set up) is waited for again at the next reconcile, never by blocking the trainer
START_TIMEOUT_SECONDS = 30.0
# an actor's own flush of its GPU samples at stop: short, as the caller waits for all actors within its close timeout
ACTOR_CLOSE_TIMEOUT_SECONDS = 1.0


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
        self.client.close(timeout=ACTOR_CLOSE_TIMEOUT_SECONDS)
        return True


def _alive_gpu_nodes(ray):
    out = {}
    for n in ray.nodes():
        if n.get("Alive") and (n.get("Resources") or {}).get("GPU", 0) > 0:
            out[n["NodeID"]] = n["NodeManagerAddress"]
    return out


class GpuSamplerFleet:
    def __init__(self, client, interval=1.0, reconcile_interval=RECONCILE_INTERVAL_SECONDS, start_timeout=START_TIMEOUT_SECONDS):
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._ray = ray
        self._affinity = NodeAffinitySchedulingStrategy
        self._client = client
        self._interval = interval
        self._reconcile_interval = reconcile_interval
        self._start_timeout = start_timeout
        self._actor_class = ray.remote(num_cpus=0)(_SamplerActor)
        #: NodeID → actor handle, or None when that node has no GPU telemetry (not retried)
        self.samplers = {}
        #: NodeID → (actor handle, its start ref, node IP) of an actor placed but not started yet
        self.starting = {}
        self._slow = set()  # NodeIDs of the actors said not to have started in time (said once each)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def _kill(self, handle):
        try:
            self._ray.kill(handle)
        except Exception:
            pass

    def reconcile(self):
        """Forgets samplers of vanished nodes, places one on every new alive GPU node, and waits for the ones placed and
        not started yet together, at most ``start_timeout`` seconds (the lock is not held meanwhile: ``stop`` never
        waits for a start)."""
        ray = self._ray
        with self._lock:
            if self._stop.is_set():
                return
            alive = _alive_gpu_nodes(ray)
            for node_id in [n for n in self.samplers if n not in alive]:
                handle = self.samplers.pop(node_id)
                if handle is not None:
                    self._kill(handle)
            for node_id in [n for n in self.starting if n not in alive]:
                self._kill(self.starting.pop(node_id)[0])
            for node_id, ip in alive.items():
                if node_id in self.samplers or node_id in self.starting:
                    continue
                strategy = self._affinity(node_id=node_id, soft=False)
                try:
                    handle = self._actor_class.options(scheduling_strategy=strategy).remote(
                        self._client.address, self._client.token, ip, self._interval, getattr(self._client, "dashboard_dir", None))
                    self.starting[node_id] = (handle, handle.start.remote(), ip)
                except Exception as err:
                    logger.warning("GPU sampler on %s could not be placed (%s); retrying at the next reconcile", ip, err)
            starting = dict(self.starting)
        if not starting:
            return
        refs = [ref for _, ref, _ in starting.values()]
        try:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self._start_timeout)
        except Exception as err:
            logger.warning("GPU samplers could not be waited for (%s); retrying at the next reconcile", err)
            return
        with self._lock:
            for node_id, entry in starting.items():
                handle, ref, ip = entry
                if self.starting.get(node_id) is not entry:
                    continue  # stopped, vanished, or taken by a reconcile running at the same time
                if ref not in ready:
                    if node_id not in self._slow:
                        self._slow.add(node_id)
                        logger.warning("GPU sampler on %s has not started within %gs (its node may be draining or setting "
                                       "up); waiting for it again at each reconcile", ip, self._start_timeout)
                    continue
                del self.starting[node_id]
                self._slow.discard(node_id)
                try:
                    started = ray.get(ref, timeout=0)
                except Exception as err:
                    logger.warning("GPU sampler on %s failed to start (%s)", ip, err)
                    started = False
                if not started:
                    self._kill(handle)
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

    def stop(self, timeout=10.0):
        """Stops every sampler at once and waits for them together, at most ``timeout`` seconds (a sampler that has
        not flushed its GPU samples by then is killed with them)."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        with self._lock:
            handles = [h for h in self.samplers.values() if h is not None]
            placed = [h for h, _, _ in self.starting.values()]
            self.samplers.clear()
            self.starting.clear()
        refs = []
        for handle in handles:
            try:
                refs.append(handle.stop.remote())
            except Exception:
                pass
        if refs:
            try:
                self._ray.wait(refs, num_returns=len(refs), timeout=max(0.0, deadline - time.monotonic()))
            except Exception:
                pass
        for handle in handles + placed:
            self._kill(handle)


def start_gpu_samplers(client, interval=1.0, reconcile_interval=RECONCILE_INTERVAL_SECONDS, start_timeout=START_TIMEOUT_SECONDS):
    """Places a sampler on every alive GPU node now and as nodes join (waiting at most ``start_timeout`` seconds for
    them here); ``client.close()`` stops them within its timeout."""
    fleet = GpuSamplerFleet(client, interval, reconcile_interval, start_timeout).start()
    client.add_close_hook(fleet.stop)
    return fleet
