"""rlsight.ray against a small stand-in `ray` module that records what is asked of it."""

import sys
import types
import unittest
from unittest import mock


class FakeRay:
    def __init__(self):
        self.node_list = []
        self.created = []  # (options, args)
        self.killed = []
        self.remote_options = []
        self.start_result = {}

    def module(self):
        ray = types.ModuleType("ray")
        fake = self
        ray.nodes = lambda: [dict(n) for n in fake.node_list]
        ray.kill = lambda handle: fake.killed.append(handle)
        ray.get = lambda ref, timeout=None: ref
        ray.is_initialized = lambda: True

        def remote(**opts):
            fake.remote_options.append(opts)

            def wrap(cls):
                class ActorClass:
                    def options(self, **o):
                        class Bound:
                            def remote(self, *args):
                                handle = types.SimpleNamespace(node=args[2])
                                handle.start = types.SimpleNamespace(remote=lambda: fake.start_result.get(args[2], True))
                                handle.stop = types.SimpleNamespace(remote=lambda: True)
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


if __name__ == "__main__":
    unittest.main()
