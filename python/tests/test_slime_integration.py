import importlib
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

from rlsight.integrations import slime as hooks

from .stub_collector import StubCollector


class SlimeHooksTest(unittest.TestCase):
    def setUp(self):
        importlib.reload(hooks)  # a fresh module: no client yet

    def tearDown(self):
        c = hooks._client
        if c is not None:
            c.close(timeout=0.1)

    def test_without_the_environment_they_warn_once_and_return_false(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("RLSIGHT_DUMP_DETAILS", None)
            with self.assertLogs("rlsight.slime", "WARNING") as logs:
                self.assertIs(hooks.log_rollout_data(0, types.SimpleNamespace(), [], {}, 1.0), False)
                self.assertIs(hooks.log_eval_rollout_data(0, types.SimpleNamespace(), {}, None), False)
            self.assertEqual(len(logs.output), 1)
            self.assertIn("RLSIGHT_DUMP_DETAILS is not set", logs.output[0])

    def test_bad_input_never_raises_into_training(self):
        with tempfile.TemporaryDirectory() as run, mock.patch.dict(os.environ, {"RLSIGHT_DUMP_DETAILS": run}):
            with self.assertLogs("rlsight", "WARNING"):
                self.assertIs(hooks.log_rollout_data(0, None, None, None, None), False)
                self.assertIs(hooks.log_rollout_data(1, types.SimpleNamespace(), [object()], {}, 0.0), False)
                self.assertIs(hooks.log_eval_rollout_data(0, None, {"x": {"rewards": []}}, None), False)
            # a call shape slime does not use (missing or extra arguments) is warned about, not raised
            with self.assertLogs("rlsight.slime", "WARNING") as logs:
                self.assertIs(hooks.log_rollout_data(), False)
                self.assertIs(hooks.log_rollout_data(0, types.SimpleNamespace(), [], {}, 1.0, "extra", more=1), False)
                self.assertIs(hooks.log_eval_rollout_data(0), False)
                self.assertIs(hooks.log_eval_rollout_data(0, None, {}, None, "extra"), False)
            self.assertEqual(len(logs.output), 4)
            self.assertEqual(sum("slime never calls it" in line for line in logs.output), 3, logs.output)
            # the collector is waited for in the background; the client is there and closes
            self.assertIsNotNone(hooks.client())
            hooks.client().close(timeout=0.1)

    def test_an_exit_without_any_collector_is_not_held_up(self):
        code = ("import types; from rlsight.integrations import slime as h; "
                "print(h.log_rollout_data(0, types.SimpleNamespace(), [{'group_index': 0, 'reward': 1.0, 'response_length': 1, "
                "'loss_mask': [1], 'status': 'completed', 'response': 'x', 'non_generation_time': 0.0}], {}, 1.0))")
        with tempfile.TemporaryDirectory() as run:
            env = dict(os.environ, RLSIGHT_DUMP_DETAILS=run, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(hooks.__file__))))
            # the close waits for a collector that never came at most a second, not RLSIGHT_CLOSE_TIMEOUT
            r = subprocess.run([sys.executable, "-c", code], env=dict(env, RLSIGHT_CLOSE_TIMEOUT="120"), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "False")

    def test_a_replay_of_dumped_rollouts_records_no_perf_metrics(self):
        stub = StubCollector()
        sample = {"group_index": 0, "index": 0, "reward": 1.0, "response_length": 4, "loss_mask": [1, 1, 1, 1], "status": "completed",
                  "response": "a", "non_generation_time": 0.0}
        try:
            with tempfile.TemporaryDirectory() as run, mock.patch.dict(os.environ, {"RLSIGHT_DUMP_DETAILS": run}):
                os.makedirs(os.path.join(run, "dashboard"))
                with open(os.path.join(run, "dashboard", "collector.json"), "w") as f:
                    json.dump({"address": stub.address, "token": stub.token}, f)
                live = types.SimpleNamespace(rollout_num_gpus=2, load_debug_rollout_data=None)
                replay = types.SimpleNamespace(rollout_num_gpus=2, load_debug_rollout_data="/dumps/rollout_{rollout_id}.pt")
                self.assertIs(hooks.log_rollout_data(0, live, [sample], {}, 2.0), False)
                with self.assertLogs("rlsight.slime", "WARNING") as logs:
                    for rollout_id in (1, 2):
                        self.assertIs(hooks.log_rollout_data(rollout_id, replay, [dict(sample, index=rollout_id)], {}, 0.01), False)
                self.assertEqual(logs.output, ["WARNING:rlsight.slime:rlsight: slime replays --load-debug-rollout-data: perf/ "
                                               "metrics are not recorded (its rollout_time is the time taken to load the dump); "
                                               "rollout/ metrics and samples are"])
                self.assertTrue(hooks.client().flush(5))
            records = [json.loads(l) for l in stub.lines("metrics")]
            self.assertEqual([r["step"] for r in records], [0, 1, 2])
            self.assertIn("perf/rollout_time", records[0]["metrics"])
            for r in records[1:]:
                self.assertEqual([k for k in r["metrics"] if k.startswith("perf/")], [])
                self.assertEqual(r["metrics"]["rollout/response_len/mean"], 4)
            self.assertEqual([json.loads(l)["rollout_id"] for l in stub.lines("samples")], [0, 1, 2])
        finally:
            stub.close()

    def test_metrics_follow_slimes_formulas(self):
        args = types.SimpleNamespace(advantage_estimator="grpo", reward_key=None, rollout_num_gpus=2)
        samples = [
            {"group_index": 0, "reward": 1.0, "response_length": 4, "loss_mask": [1, 1, 0, 1], "status": "completed",
             "response": "a", "prefix_cache_info": {"cached_tokens": 2, "total_prompt_tokens": 8}, "non_generation_time": 0.0},
            {"group_index": 0, "reward": 1.0, "response_length": 6, "loss_mask": None, "status": "truncated",
             "response": "b", "prefix_cache_info": {"cached_tokens": 0, "total_prompt_tokens": 8}, "non_generation_time": 0.0},
        ]
        m = hooks.compute_metrics_from_samples(args, samples)
        self.assertEqual(m["response_len/mean"], 4.5)
        self.assertEqual(m["response_len/max"], 6)
        self.assertEqual(m["zero_std/count_1.0"], 1)
        self.assertEqual(m["prefix_cache_hit_rate"], 0.125)
        self.assertEqual(m["truncated_ratio"], 0.5)
        p = hooks.compute_perf_metrics_from_samples(args, samples, 2.0)
        self.assertEqual(p["tokens_per_gpu_per_sec"], 2.5)
        self.assertEqual(p["longest_effective_sample_tokens_per_sec"], 3.0)
        self.assertNotIn("non_generation_time/mean", p)


if __name__ == "__main__":
    unittest.main()
