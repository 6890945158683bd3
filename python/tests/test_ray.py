"""rlsight.ray against a small stand-in `ray` module that records what is asked of it."""

import sys
import threading
import time
import types
import unittest
from unittest import mock

import rlsight

from .test_client import closed_port
from .test_gpu_sampler import fake_nvml


class Ref:
    """An object ref: done at once with ``value``, or when ``run`` (started in its own thread, as an actor method runs
    in its own process) returns; never with ``pending``."""

    def __init__(self, value=None, run=None, pending=False):
        self.done = threading.Event()
        self.value = value
        if run is not None:
            def call():
                self.value = run()
                self.done.set()
            threading.Thread(target=call, daemon=True).start()
        elif not pending:
            self.done.set()


def fake_wait(refs, num_returns=1, timeout=None):
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        ready = [r for r in refs if r.done.is_set()]
        if len(ready) >= num_returns or (deadline is not None and time.monotonic() >= deadline):
            return ready, [r for r in refs if r not in ready]
        time.sleep(0.01)


def fake_get(ref, timeout=None):
    # a ray.get without a timeout on an actor that never starts waits forever in Ray; here it fails the test instead
    if not ref.done.wait(30 if timeout is None else timeout):
        raise TimeoutError("ray.get: not ready" + (" (waited without a timeout)" if timeout is None else ""))
    return ref.value


class FakeRay:
    def __init__(self):
        self.node_list = []
        self.created = []  # (options, args)
        self.killed = []
        self.remote_options = []
        self.start_result = {}

    def actor_handle(self, cls, args):
        """The handle of an actor placed on node ``args[2]``: its start answers ``start_result`` (True by default)."""
        handle = types.SimpleNamespace(node=args[2])
        handle.start = types.SimpleNamespace(remote=lambda: Ref(self.start_result.get(args[2], True)))
        handle.stop = types.SimpleNamespace(remote=lambda: Ref(True))
        return handle

    def module(self):
        ray = types.ModuleType("ray")
        fake = self
        ray.nodes = lambda: [dict(n) for n in fake.node_list]
        ray.kill = lambda handle: fake.killed.append(handle)
        ray.get = fake_get
        ray.wait = fake_wait
        ray.is_initialized = lambda: True

        def remote(**opts):
            fake.remote_options.append(opts)

            def wrap(cls):
                class ActorClass:
                    def options(self, **o):
                        class Bound:
                            def remote(self, *args):
                                handle = fake.actor_handle(cls, args)
                                fake.created.append((o, args, handle))
                                return handle

                        return Bound()

                return ActorClass()

            return wrap

        ray.remote = remote
        util = types.ModuleType("ray.util")
        strategies = types.ModuleType("ray.util.scheduling_strategies")

        class NodeAffinitySchedulingStrategy:
            def __init__(self, node_id, soft):
                self.node_id, self.soft = node_id, soft

        strategies.NodeAffinitySchedulingStrategy = NodeAffinitySchedulingStrategy
        util.scheduling_strategies = strategies
        ray.util = util
        return {"ray": ray, "ray.util": util, "ray.util.scheduling_strategies": strategies}


def node(node_id, ip, gpus=8, alive=True):
    return {"NodeID": node_id, "NodeManagerAddress": ip, "Alive": alive, "Resources": {"CPU": 64, "GPU": gpus} if gpus else {"CPU": 8}}


class RayTest(unittest.TestCase):
    def test_one_sampler_per_alive_gpu_node_reconciled_and_stopped(self):
        fake = FakeRay()
        fake.node_list = [node("a", "10.0.0.1"), node("b", "10.0.0.2"), node("cpu", "10.0.0.9", gpus=0), node("dead", "10.0.0.3", alive=False)]
        fake.start_result = {"10.0.0.2": False}  # a GPU node without telemetry
        with mock.patch.dict(sys.modules, fake.module()):
            import rlsight.ray as rray

            # the run's dashboard dir goes to each actor: its client finds a collector that starts or restarts later
            client = types.SimpleNamespace(address="http://10.0.0.100:7789", token="tok", dashboard_dir="/runs/r/dashboard", hooks=[])
            client.add_close_hook = client.hooks.append
            fleet = rray.start_gpu_samplers(client, interval=1.0, reconcile_interval=3600)
            try:
                self.assertEqual(fake.remote_options, [{"num_cpus": 0}])
                self.assertEqual([(o["scheduling_strategy"].node_id, o["scheduling_strategy"].soft) for o, _, _ in fake.created], [("a", False), ("b", False)])
                self.assertEqual([args for _, args, _ in fake.created], [("http://10.0.0.100:7789", "tok", "10.0.0.1", 1.0, "/runs/r/dashboard"), ("http://10.0.0.100:7789", "tok", "10.0.0.2", 1.0, "/runs/r/dashboard")])
                self.assertIsNone(fleet.samplers["b"], "a node without GPU telemetry is not retried")
                self.assertEqual(len(fake.killed), 1)
                fleet.reconcile()
                self.assertEqual(len(fake.created), 2, "steady state places nothing")
                # node a dies, a new node joins, b restarts under a new NodeID
                fake.node_list = [node("b2", "10.0.0.2"), node("c", "10.0.0.4")]
                fake.start_result = {}
                handle_a = fleet.samplers["a"]
                fleet.reconcile()
                self.assertIn(handle_a, fake.killed)
                self.assertEqual(sorted(fleet.samplers), ["b2", "c"])
            finally:
                for hook in client.hooks:
                    hook()
            self.assertEqual(fleet.samplers, {})
            self.assertEqual(len([h for h in fake.killed if getattr(h, "node", None) in ("10.0.0.2", "10.0.0.4")]), 3)


class RunningActors(FakeRay):
    """Runs each actor for real, as Ray would on its node (here in threads); a node in ``pending`` never gets its actor
    scheduled (draining, or its runtime_env never set up)."""

    def __init__(self, pending=()):
        super().__init__()
        self.pending = set(pending)

    def actor_handle(self, cls, args):
        handle = types.SimpleNamespace(node=args[2])
        if args[2] in self.pending:
            handle.start = types.SimpleNamespace(remote=lambda: Ref(pending=True))
            handle.stop = types.SimpleNamespace(remote=lambda: Ref(pending=True))
        else:
            made = Ref(run=lambda: cls(*args))
            handle.start = types.SimpleNamespace(remote=lambda: Ref(run=lambda: made.done.wait() and made.value.start()))
            handle.stop = types.SimpleNamespace(remote=lambda: Ref(run=lambda: made.done.wait() and made.value.stop()))
        return handle


class RayTimingTest(unittest.TestCase):
    def test_start_and_close_are_bounded_for_the_whole_fleet(self):
        fake = RunningActors(pending={"10.0.0.9"})
        fake.node_list = [node("n%d" % i, "10.0.0.%d" % i) for i in range(1, 6)] + [node("stuck", "10.0.0.9")]
        modules = dict(fake.module(), pynvml=fake_nvml(count=2))
        with mock.patch.dict(sys.modules, modules):
            import rlsight.ray as rray

            client = rlsight.connect(collector=closed_port(), token="t", gpus=[0], node="10.0.0.1", register_atexit=False)
            with self.assertLogs("rlsight.ray", "WARNING") as logs:
                fleet = rray.start_gpu_samplers(client, interval=0.2, reconcile_interval=3600, start_timeout=1.0)
            # the five nodes that started are sampled; the stuck one is waited for again, not placed again
            self.assertEqual(sorted(n for n, h in fleet.samplers.items() if h is not None), ["n1", "n2", "n3", "n4", "n5"])
            self.assertEqual(list(fleet.starting), ["stuck"])
            self.assertEqual(logs.output, ["WARNING:rlsight.ray:GPU sampler on 10.0.0.9 has not started within 1s (its node may "
                                           "be draining or setting up); waiting for it again at each reconcile"])
            fleet.reconcile()
            self.assertEqual(len(fake.created), 6)
            client.log({"a": 1}, step=1, step_key="s")
            # each actor's own client flushes to the dead collector at stop: one after another that is a second or more per
            # node (five before); together, with the trainer's own flush, it is the close timeout
            began = time.monotonic()
            self.assertFalse(client.close(timeout=2))
            took = time.monotonic() - began
        self.assertLess(took, 2 + 3, "close(timeout=2) of six nodes took %.1fs" % took)
        self.assertEqual(fleet.samplers, {})
        self.assertEqual(fleet.starting, {})
        self.assertEqual(len(fake.killed), 6, "every actor, the stuck one too, is killed")


if __name__ == "__main__":
    unittest.main()
