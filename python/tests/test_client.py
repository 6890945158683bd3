import json
import os
import socket
import tempfile
import time
import unittest

import rlsight
from rlsight.client import Client

from .stub_collector import StubCollector


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d" % port


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.stub = StubCollector()
        self.client = Client(self.stub.address, self.stub.token, node="10.0.0.1", gpus=[0, 1], rank=3, register_atexit=False)

    def tearDown(self):
        self.client.close(timeout=2)
        self.stub.close()

    def test_a_close_hook_that_takes_all_it_is_given_leaves_the_last_records_their_time(self):
        given = []
        self.client.add_close_hook(lambda seconds: (given.append(seconds), time.sleep(seconds)))
        self.client.log({"loss": 1.5}, step=9, step_key="train/step")
        self.assertTrue(self.client.close(timeout=2))
        self.assertLessEqual(given[0], 1.0)
        self.assertTrue(any('"loss":1.5' in line for _, lines in self.stub.batches for line in lines), self.stub.batches)

    def test_phase_context_and_decorator_send_open_marker_then_interval(self):
        with self.client.phase("actor_train"):
            pass

        @self.client.phase("update_weights", role="train", rank=5, gpus=[2])
        def update():
            return 42

        self.assertEqual(update(), 42)
        self.assertTrue(self.client.flush(5))
        lines = [json.loads(l) for l in self.stub.lines("phases")]
        self.assertEqual([(p["name"], p["t1"] == -1.0) for p in lines],
                         [("actor_train", True), ("actor_train", False), ("update_weights", True), ("update_weights", False)])
        self.assertEqual(lines[0]["t0"], lines[1]["t0"], "the closing twin repeats t0 exactly")
        self.assertEqual(list(lines[1].keys()), ["name", "t0", "t1", "node", "gpus", "rank", "role"])
        self.assertEqual((lines[1]["node"], lines[1]["gpus"], lines[1]["rank"], lines[1]["role"]), ("10.0.0.1", [0, 1], 3, "train"))
        self.assertEqual((lines[3]["gpus"], lines[3]["rank"]), ([2], 5))
        self.assertGreaterEqual(lines[1]["t1"], lines[1]["t0"])

    def test_a_phase_naming_no_gpu_is_sent_and_warned_about_once(self):
        c = Client(self.stub.address, self.stub.token, node="n", gpus=[], rank=0, register_atexit=False)
        try:
            with self.assertLogs("rlsight", "WARNING") as logs:
                with c.phase("actor_train"):
                    pass
            self.assertEqual(len(logs.output), 1)
            self.assertIn("phase 'actor_train' names no GPU", logs.output[0])
            self.assertIn("gpus=[...]", logs.output[0])
            self.assertTrue(c.flush(5))
            self.assertEqual([json.loads(l)["gpus"] for l in self.stub.lines("phases")], [[], []])
        finally:
            c.close(timeout=2)

    def test_a_step_logged_without_its_step_key_is_warned_about(self):
        with self.assertLogs("rlsight", "WARNING") as logs:
            self.client.log({"train/loss": 1.0}, step=7)
            self.client.log({"train/loss": 0.5}, step=8)
        self.assertEqual(len(logs.output), 1)
        self.assertIn("log(step=...) without step_key", logs.output[0])
        self.assertTrue(self.client.flush(5))
        self.assertEqual([json.loads(l)["step"] for l in self.stub.lines("metrics")], [7, 8])

    def test_log_keeps_scalars_and_writes_floats_as_python_does(self):
        class Zero:
            def __float__(self):
                return 2.5

        with self.assertLogs("rlsight", "WARNING") as logs:
            self.client.log({"train/loss": 1.0, "n": 3, "tag": "x", "ok": True, "np": Zero(), "list": [1], "d": {}, "none": None}, step=7, step_key="train/step")
        self.assertIn("left out d, list, none", logs.output[0])
        self.assertTrue(self.client.flush(5))
        (line,) = self.stub.lines("metrics")
        self.assertRegex(line, r'^\{"ts":\d+\.\d+,"step_key":"train/step","step":7,"metrics":\{"train/loss":1\.0,"n":3,"tag":"x","ok":true,"np":2\.5,"train/step":7\}\}$')

    def test_batches_of_64_go_without_waiting(self):
        c = Client(self.stub.address, self.stub.token, node="n", gpus=[], rank=0, batch_seconds=60, register_atexit=False)
        try:
            for i in range(64):
                c.trajectory("attempt_start", i, ts=1000.0 + i)
            deadline = time.time() + 5
            while len(self.stub.lines("trajectories")) < 64 and time.time() < deadline:
                time.sleep(0.02)
            lines = self.stub.lines("trajectories")
            self.assertEqual(len(lines), 64)
            self.assertEqual(lines[0], '{"ts":1000.0,"kind":"attempt_start","sample_index":0,"group_index":-1,"turn":-1,"weight_version":"","detail":""}')
        finally:
            c.close(timeout=2)

    def test_topology_and_data_buffer_records(self):
        self.client.topology([{"addr": "http://10.0.0.1:15000", "gpus": [["10.0.0.1", 0], ["10.0.0.1", 1]]}], ts=5.0)
        self.client.data_buffer(12, ts=6.0)
        self.client.data_buffer(None)
        self.assertTrue(self.client.flush(5))
        self.assertEqual(self.stub.lines("topology"), ['{"ts":5.0,"engines":[{"addr":"http://10.0.0.1:15000","worker_type":"regular","engine_rank":0,"gpus":[["10.0.0.1",0],["10.0.0.1",1]],"gpu_uuids":[null,null]}]}'])
        self.assertEqual(self.stub.lines("data_buffer"), ['{"ts":6.0,"length":12}'])

    def test_a_sample_too_large_for_a_batch_is_left_out_and_its_step_still_completes(self):
        big = {"index": 1, "response": "x" * (9 << 20)}
        with self.assertLogs("rlsight", "WARNING") as logs:
            self.client.samples(4, [{"index": 0, "response": "a"}, big, {"index": 2, "response": "b"}])
        self.assertIn("sample 1 of rollout 4", logs.output[0])
        self.client.log({"loss": 1.0}, step=4)
        self.assertTrue(self.client.flush(5))
        lines = [json.loads(l) for path, batch in self.stub.batches if path.endswith("/samples") for l in batch]
        self.assertEqual([(l["count"], l["position"], l["sample"]["index"]) for l in lines], [(2, 0, 0), (2, 1, 2)])
        self.assertEqual(self.client.stats()["rejected"], 1)
        self.assertEqual(self.client.stats()["sent"], 3)

    def test_non_ascii_text_is_sent_as_utf8_and_sized_in_bytes(self):
        odd = "emoji \U0001F600, CJK \u4e2d\u6587, RTL \u05e9\u05dc\u05d5\u05dd, NUL \x00, lone \ud83d"
        samples = [{"index": 0, "response": "\u00e9" * (1 << 21)},  # 2 MiB characters, 4 MiB of UTF-8 (12 MiB escaped)
                   {"index": 1, "response": "\u4e2d" * (3 << 20)},  # 3 Mi characters, 9 MiB of UTF-8: more than a batch
                   {"index": 2, "response": odd, "prompt": "\u4e2d" * 600_000}]
        with self.assertLogs("rlsight", "WARNING") as logs:
            self.client.samples(3, samples)
        self.assertEqual(len(logs.output), 1)
        self.assertIn("left sample 1 of rollout 3 out of its step: %d bytes encoded" % (9 * (1 << 20) + len('{"index":1,"response":""}')), logs.output[0])
        # a step of samples of 1.8 MB of UTF-8 each (600,000 characters) goes in batches the collector may take
        self.client.samples(4, [{"index": i, "prompt": "\u4e2d" * 600_000} for i in range(5)])
        self.client.log({"\u5956\u52b1": 1.0, "note": odd}, step=1, step_key="train/step")
        self.assertTrue(self.client.flush(20))
        got = [json.loads(l) for l in self.stub.lines("samples")]
        self.assertEqual([(l["rollout_id"], l["sample"]["index"]) for l in got], [(3, 0), (3, 2)] + [(4, i) for i in range(5)])
        self.assertEqual(got[0]["sample"]["response"], samples[0]["response"])
        self.assertEqual(got[1]["sample"], samples[2], "lone surrogate, NUL and all")
        (metrics,) = [json.loads(l) for l in self.stub.lines("metrics")]
        self.assertEqual(metrics["metrics"], {"\u5956\u52b1": 1.0, "note": odd, "train/step": 1})
        sizes = [sum(len(l.encode("utf-8")) + 1 for l in lines) for path, lines in self.stub.batches if path.endswith("/samples")]
        self.assertTrue(all(size <= 8 << 20 for size in sizes), sizes)
        s = self.client.stats()
        self.assertEqual((s["sent"], s["rejected"]), (8, 1))

    def test_a_record_too_large_for_a_batch_is_left_out_alone_and_flush_says_so(self):
        with self.assertLogs("rlsight", "WARNING") as logs:
            self.client.log({"note": "x" * (9 << 20)}, step=100, step_key="train/step")
            for step in range(101, 111):
                self.client.log({"train/loss": 0.5}, step=step, step_key="train/step")
            self.assertFalse(self.client.flush(10), "one record was refused")
        self.assertTrue(any("left out a metrics record" in line for line in logs.output), logs.output)
        self.assertEqual([json.loads(l)["step"] for l in self.stub.lines("metrics")], list(range(101, 111)))
        s = self.client.stats()
        self.assertEqual((s["sent"], s["rejected"], s["held"]), (10, 1, 0))

    def test_a_sample_that_cannot_be_encoded_is_left_out_alone(self):
        class ListSample:
            def to_dict(self):
                return [1, 2]

        loop = {"index": 1}
        loop["self"] = loop
        with self.assertLogs("rlsight", "WARNING"):
            self.client.samples(7, [{"index": 0, "response": "a"}, loop, ListSample(), {"index": 3, "response": "b"}])
        self.assertTrue(self.client.flush(5))
        lines = [json.loads(l) for l in self.stub.lines("samples")]
        self.assertEqual([(l["count"], l["sample"]["index"]) for l in lines], [(2, 0), (2, 3)])
        self.assertEqual(self.client.stats()["rejected"], 2)

    def test_a_step_carried_in_the_metrics_as_a_numpy_integer_or_a_whole_float_is_the_step(self):
        class Int64:
            shape = ()

            def __index__(self):
                return 3

            def __float__(self):
                return 3.0

        self.client.log({"train/step": Int64(), "loss": 1.0}, step_key="train/step")
        self.client.log({"train/step": 4.0, "loss": 1.0}, step_key="train/step")
        self.assertTrue(self.client.flush(5))
        self.assertEqual([(json.loads(l)["step"], json.loads(l)["metrics"]["train/step"]) for l in self.stub.lines("metrics")], [(3, 3), (4, 4.0)])

    def test_a_step_that_is_no_finite_integer_keeps_the_metrics_without_a_step(self):
        with self.assertLogs("rlsight", "WARNING") as logs:
            for step in (float("nan"), float("inf"), 1.5, "twelve"):
                self.client.log({"loss": 1.0}, step=step, step_key="train/step")
            self.client.log({"loss": 2.0}, step=float("nan"), step_key="eval/step")
        # a step that holds an integer is one, whatever its type
        self.client.log({"loss": 3.0}, step=5.0, step_key="train/step")
        self.client.log({"loss": 4.0}, step="6", step_key="train/step")
        self.assertEqual(len(logs.output), 2, "once per step_key")
        self.assertIn("rlsight log(step=nan) for step_key 'train/step' is not a finite integer: the metrics are kept "
                      "without a step (on wall time only)", logs.output[0])
        self.assertIn("step_key 'eval/step'", logs.output[1])
        self.assertTrue(self.client.flush(5))
        self.assertEqual([(r["step_key"], r["step"], r["metrics"]) for r in map(json.loads, self.stub.lines("metrics"))],
                         [("train/step", None, {"loss": 1.0})] * 4 + [("eval/step", None, {"loss": 2.0}),
                          ("train/step", 5, {"loss": 3.0, "train/step": 5}), ("train/step", 6, {"loss": 4.0, "train/step": 6})])
        s = self.client.stats()
        self.assertEqual((s["queued"], s["sent"], s["rejected"], s["dropped"]), (7, 7, 0, 0))

    def test_flush_and_close_keep_the_back_off_against_a_refusing_collector(self):
        c = Client(self.stub.address, "wrong", node="n", gpus=[], rank=0, register_atexit=False)
        c.log({"loss": 1.0}, step=1, step_key="train/step")
        with self.assertLogs("rlsight", "WARNING"):
            self.assertFalse(c.flush(3))
            self.assertFalse(c.close(timeout=2))
        # back-off 0.5, 1, 2, 4 s: a try at flush and then at 0.5 and 1.5 s; one more at close (polling gave 100)
        self.assertLessEqual(c.stats()["send_failures"], 5, c.stats())
        self.assertEqual(c.stats()["held"], 1)

    def test_flush_sends_once_a_failing_collector_takes_the_batch(self):
        self.stub.answers = [(503, {})]
        self.client.log({"loss": 1.0}, step=1, step_key="train/step")
        self.assertTrue(self.client.flush(10))
        self.assertEqual(self.client.stats()["send_failures"], 1)
        # the batch refused, then the same batch again (the stub keeps both)
        self.assertEqual([json.loads(l)["step"] for l in self.stub.lines("metrics")], [1, 1])
        self.assertEqual(len(set(self.stub.batch_ids)), 1)

    def test_records_given_after_close_are_counted_as_dropped(self):
        c = Client(self.stub.address, self.stub.token, node="n", gpus=[], rank=0, register_atexit=False)
        self.assertTrue(c.close(timeout=2))
        with self.assertLogs("rlsight", "WARNING") as logs:
            c.log({"loss": 1.0}, step=1)
            with c.phase("actor_train"):
                pass
        self.assertIn("client is closed", logs.output[0])
        self.assertEqual((c.stats()["dropped"], c.stats()["held"]), (3, 0))

    @unittest.skipUnless(hasattr(os, "fork"), "fork")
    def test_a_forked_child_sends_its_own_records_under_its_own_producer(self):
        self.client.log({"parent": 1.0}, step=1)
        self.assertTrue(self.client.flush(5))
        pid = os.fork()
        if pid == 0:  # the child: its own sender thread, none of the parent's records
            code = 1
            try:
                self.client.log({"child": 1.0}, step=2)
                code = 0 if self.client.flush(5) and self.client.stats()["sent"] == 1 else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertEqual([sorted(json.loads(l)["metrics"]) for l in self.stub.lines("metrics")], [["parent"], ["child"]])
        # numbered as another producer's: the collector would take a batch numbered as the parent's for a resend
        producers = {bid.split("/")[0] for (path, _), bid in zip(self.stub.batches, self.stub.batch_ids) if path.endswith("/metrics")}
        self.assertEqual(len(producers), 2)

    def test_bad_input_never_raises(self):
        self.client.trajectory("no_such_kind", 1)
        self.client.topology([{"no_addr": 1}])
        self.client.log(None)
        self.client.data_buffer("many")
        self.assertTrue(self.client.flush(5))
        self.assertEqual(self.stub.batches, [])


class DeadCollectorTest(unittest.TestCase):
    def test_a_dead_collector_changes_nothing_for_training(self):
        c = Client(closed_port(), "t" * 43, node="n", gpus=[], rank=0, queue_size=1000, batch_seconds=0.05, timeout=0.2, register_atexit=False)
        try:
            worst = 0.0
            for i in range(5000):
                t = time.perf_counter()
                with c.phase("actor_train"):
                    pass
                c.log({"x": float(i)}, step=i, step_key="train/step")
                worst = max(worst, time.perf_counter() - t)
            self.assertFalse(c.flush(0.5))
            s = c.stats()
            self.assertGreater(s["dropped"], 0)
            self.assertLessEqual(s["held"], 1000)
            self.assertEqual(s["sent"], 0)
            print("worst call latency with a dead collector: %.1f us" % (worst * 1e6))
        finally:
            self.assertFalse(c.close(timeout=0.2))

    def test_refused_batches_are_counted_not_retried(self):
        stub = StubCollector(status=400)
        c = Client(stub.address, stub.token, node="n", gpus=[], rank=0, register_atexit=False)
        try:
            c.data_buffer(1, ts=1.0)
            # done with (not retried), but not acknowledged: flush() says so
            self.assertFalse(c.flush(5))
            self.assertEqual(c.stats()["rejected"], 1)
            self.assertEqual(c.stats()["held"], 0)
        finally:
            c.close(timeout=1)
            stub.close()

    def test_a_batch_not_acknowledged_is_sent_again_under_the_same_number(self):
        stub = StubCollector()
        stub.answers = [(503, {"error": "write-ahead log failed"})]
        c = Client(stub.address, stub.token, node="n", gpus=[], rank=0, batch_seconds=0.05, register_atexit=False)
        try:
            c.data_buffer(1, ts=1.0)
            self.assertTrue(c.flush(10))
            c.data_buffer(2, ts=2.0)
            self.assertTrue(c.flush(10))
            self.assertEqual(len(stub.batch_ids), 3)
            first, again, second = stub.batch_ids
            self.assertEqual(first, again)
            producer, seq = first.split("/")
            self.assertEqual(second, "%s/%d" % (producer, int(seq) + 1))
            self.assertEqual(c.stats()["sent"], 2)
        finally:
            c.close(timeout=1)
            stub.close()

    def test_a_batch_never_acknowledged_is_dropped_and_counted_after_retry_seconds(self):
        c = Client(closed_port(), "t" * 43, node="n", gpus=[], rank=0, batch_seconds=0.05, timeout=0.2, retry_seconds=0.3,
                   register_atexit=False)
        try:
            for i in range(10):
                c.log({"x": float(i)}, step=i, step_key="train/step")
            deadline = time.monotonic() + 10
            while c.stats()["held"] and time.monotonic() < deadline:
                c.flush(0.2)
            s = c.stats()
            self.assertEqual((s["held"], s["dropped"], s["sent"]), (0, 10, 0))
        finally:
            c.close(timeout=0.2)

    def test_bad_lines_the_collector_left_out_are_counted_as_rejected(self):
        stub = StubCollector()
        stub.answers = [(200, {"accepted": 2, "rejected": 1, "problems": ["gpu_util line 2, field util: expected an integer"]})]
        c = Client(stub.address, stub.token, node="n", gpus=[], rank=0, register_atexit=False)
        try:
            c.gpu_samples([(1.0, "n", 0, 5, 10, 287.43), (1.0, "n", 1, "high", 10, 1), (1.0, "n", 2, 5, 10, 300)])
            # one line refused: not everything was acknowledged
            self.assertFalse(c.flush(5))
            self.assertIn('"power_w":287.43', stub.lines("gpu_util")[0])
            s = c.stats()
            self.assertEqual((s["sent"], s["rejected"]), (2, 1))
        finally:
            c.close(timeout=1)
            stub.close()


class ConnectTest(unittest.TestCase):
    def test_connect_before_the_collector_starts_waits_for_it(self):
        stub = StubCollector()
        with tempfile.TemporaryDirectory() as run:
            with self.assertLogs("rlsight", level="WARNING") as logs:
                c = rlsight.connect(dump_details=run, node="n", gpus=[], rank=0, batch_seconds=0.05, register_atexit=False)
                c.data_buffer(1, ts=1.0)
                self.assertFalse(c.flush(0.3))
            # said once, at connect(): the sends that find no collector yet say nothing more
            self.assertEqual(len(logs.output), 1, logs.output)
            self.assertIn("no collector at", logs.output[0])
            try:
                os.makedirs(os.path.join(run, "dashboard"))
                with open(os.path.join(run, "dashboard", "collector.json"), "w") as f:
                    json.dump({"address": stub.address, "token": stub.token, "pid": 1, "started_ts": 1.0}, f)
                self.assertTrue(c.flush(10))
                self.assertEqual(stub.lines("data_buffer"), ['{"ts":1.0,"length":1}'])
            finally:
                c.close(timeout=1)
                stub.close()

    def test_connect_reads_collector_json_and_follows_a_restart(self):
        old, new = StubCollector(token="a" * 43), StubCollector(token="b" * 43)
        with tempfile.TemporaryDirectory() as run:
            dash = os.path.join(run, "dashboard")
            os.makedirs(dash)
            path = os.path.join(dash, "collector.json")
            with open(path, "w") as f:
                json.dump({"address": old.address, "token": old.token, "pid": 1, "started_ts": 1.0}, f)
            c = rlsight.connect(dump_details=run, node="n", gpus=[], rank=0, batch_seconds=0.05, register_atexit=False)
            try:
                c.data_buffer(1, ts=1.0)
                self.assertTrue(c.flush(5))
                self.assertEqual(len(old.lines("data_buffer")), 1)
                old.close()
                with open(path, "w") as f:
                    json.dump({"address": new.address, "token": new.token, "pid": 2, "started_ts": 2.0}, f)
                with self.assertLogs("rlsight", level="WARNING") as logs:
                    c.data_buffer(2, ts=2.0)
                    self.assertTrue(c.flush(10))
                # the address that failed is named, not the one found since
                self.assertIn("collector at %s unreachable" % old.address, logs.output[0])
                self.assertEqual(new.lines("data_buffer"), ['{"ts":2.0,"length":2}'])
            finally:
                c.close(timeout=1)
                new.close()

    def test_connect_without_a_target_says_what_is_missing(self):
        with self.assertRaisesRegex(ValueError, "dump_details=DIR or collector=URL"):
            rlsight.connect()
        with self.assertRaisesRegex(ValueError, "token"):
            rlsight.connect(collector="http://127.0.0.1:1")
        with self.assertRaisesRegex(ValueError, "token"):
            rlsight.connect(collector="http://127.0.0.1:1", token="")
        with self.assertRaisesRegex(ValueError, "not an http:// or https:// URL"):
            rlsight.connect(collector="127.0.0.1:7789", token="t")


if __name__ == "__main__":
    unittest.main()
