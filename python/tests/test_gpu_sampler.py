import os
import sys
import subprocess
import tempfile
import time
import types
import unittest
from unittest import mock

from rlsight import gpu_sampler
from rlsight.gpu_sampler import NO_POWER_W, AmdSmiBackend, GpuSampler, NvidiaSmiBackend, NvmlBackend, _amd_socket_power

from . import fake_smi


def fake_nvml(count=3, failing=(), no_power=()):
    n = types.SimpleNamespace()
    n.nvmlInit = lambda: None
    n.nvmlShutdown = lambda: None
    n.nvmlDeviceGetCount = lambda: count
    n.nvmlDeviceGetHandleByIndex = lambda i: i
    n.nvmlDeviceGetUUID = lambda h: ("GPU-%d" % h).encode()

    def util(h):
        if h in failing:
            raise RuntimeError("GPU is lost")
        return types.SimpleNamespace(gpu=50 + h)

    n.nvmlDeviceGetUtilizationRates = util
    n.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(used=(1000 + h) << 20)
    def power(h):
        if h in no_power:
            raise RuntimeError("Not Supported")
        return 300_500 + h

    n.nvmlDeviceGetPowerUsage = power
    n.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=10 + h, usedGpuMemory=(2000 << 20))]
    n.nvmlSystemGetProcessName = lambda pid: b"python"
    return n


class NvmlTest(unittest.TestCase):
    def test_units_and_a_failing_device_skipped(self):
        pushed = []
        s = GpuSampler(pushed.append, node="10.0.0.1", backend=NvmlBackend(fake_nvml(failing={1})))
        with self.assertLogs("rlsight.gpu_sampler", "WARNING") as logs:
            out = s.sample_once(12.5)
        self.assertEqual(out, [(12.5, "10.0.0.1", 0, 50, 1000, 300), (12.5, "10.0.0.1", 2, 52, 1002, 300)])
        self.assertIn("NVML read failed for gpu 1 on 10.0.0.1; skipping this tick", logs.output[0].replace(" (GPU is lost)", ""))
        self.assertEqual(s.sample_processes_once(13.0), [(13.0, "10.0.0.1", g, 10 + g, "python", 2000) for g in range(3)])
        self.assertEqual(s.backend.uuids, ["GPU-0", "GPU-1", "GPU-2"])
        s.flush()
        self.assertEqual(len(pushed), 1)
        s.flush()
        self.assertEqual(len(pushed), 1, "an empty buffer pushes nothing")

    def test_a_board_without_power_readings_keeps_util_and_memory(self):
        s = GpuSampler(lambda b: None, node="n", backend=NvmlBackend(fake_nvml(count=2, no_power={1})))
        with self.assertLogs("rlsight.gpu_sampler", "WARNING") as logs:
            out = s.sample_once(1.0)
            s.sample_once(2.0)
        self.assertEqual(out, [(1.0, "n", 0, 50, 1000, 300), (1.0, "n", 1, 51, 1001, NO_POWER_W)])
        self.assertEqual(NO_POWER_W, -1)
        self.assertEqual(logs.output, ["WARNING:rlsight.gpu_sampler:NVML reports no power draw for gpu 1 on n; power_w -1 marks it unknown"])

    def test_zero_devices_is_no_gpu(self):
        with self.assertRaises(gpu_sampler.Unavailable):
            NvmlBackend(fake_nvml(count=0))


class NoGpuTest(unittest.TestCase):
    def test_no_gpu_logs_one_line_and_starts_nothing(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(os.environ, {"PATH": d}), \
                mock.patch.dict("sys.modules", {"pynvml": None, "amdsmi": None}):
            with self.assertLogs("rlsight.gpu_sampler", "WARNING") as logs:
                s = GpuSampler(lambda b: None, node="n1")
            self.assertFalse(s.available)
            self.assertFalse(s.start())
            self.assertEqual(len(logs.output), 1)
            self.assertIn("GPU telemetry unavailable on n1", logs.output[0])
            self.assertIn("nvidia-smi not found", logs.output[0])
            s.stop()

    def test_the_command_exits_non_zero_with_its_message(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, PATH=d, PYTHONPATH=os.path.dirname(os.path.dirname(gpu_sampler.__file__)))
            # no pynvml/amdsmi importable and no nvidia-smi on PATH; no collector either
            code = "import sys; sys.modules['pynvml'] = None; sys.modules['amdsmi'] = None; " \
                   "from rlsight.gpu_sampler import main; raise SystemExit(main(sys.argv[1:]))"
            r = subprocess.run([sys.executable, "-c", code, "--dump-details", d, "--node", "n1"], env=env,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("GPU telemetry unavailable on n1", r.stderr)


class CommandLineTest(unittest.TestCase):
    def run_command(self, *args, env=None):
        env = dict(env if env is not None else os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(gpu_sampler.__file__)))
        env.pop("RLSIGHT_DUMP_DETAILS", None)
        return subprocess.run([sys.executable, "-m", "rlsight.gpu_sampler", *args], env=env, capture_output=True, text=True, timeout=60)

    def test_argument_mistakes_are_usage_errors_naming_the_flag(self):
        for args, said in [
            ((), "error: give --dump-details DIR (or set RLSIGHT_DUMP_DETAILS) or --collector URL --token TOKEN"),
            (("--collector", "http://127.0.0.1:19101"), "error: --collector needs --token"),
            (("--collector", "http://127.0.0.1:19101", "--token", ""), "error: --collector needs --token"),
            (("--collector", "127.0.0.1:19101"), "error: --collector: expected an http:// or https:// URL, got '127.0.0.1:19101'"),
            (("--collector", "127.0.0.1:19101", "--token", "t"), "error: --collector: expected an http:// or https:// URL"),
            (("--collector", "http://h:port", "--token", "t"), "error: --collector: expected an http:// or https:// URL"),
            (("--dump-details", "/runs/x", "--collector", "http://h:1"), "error: argument --collector: not allowed with argument --dump-details"),
            (("--dump-details", "/runs/x", "--interval", "0"), "error: argument --interval: expected a positive number of seconds, got '0'"),
            (("--dump-details", "/runs/x", "--interval", "nan"), "error: argument --interval: expected a positive number of seconds"),
            (("--dump-details", ""), "error: --dump-details: expected the run directory"),
        ]:
            r = self.run_command(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertNotIn("Traceback", r.stderr, args)
            errors = [l for l in r.stderr.splitlines() if "error:" in l]
            self.assertEqual(len(errors), 1, (args, r.stderr))
            self.assertIn(said, errors[0], args)

    def test_the_environment_names_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, PATH=d)
            code = "import sys; sys.modules['pynvml'] = None; sys.modules['amdsmi'] = None; " \
                   "from rlsight.gpu_sampler import main; raise SystemExit(main(sys.argv[1:]))"
            env.update(PYTHONPATH=os.path.dirname(os.path.dirname(gpu_sampler.__file__)), RLSIGHT_DUMP_DETAILS=d)
            r = subprocess.run([sys.executable, "-c", code, "--node", "n1"], env=env, capture_output=True, text=True, timeout=60)
        # past the arguments: no GPU here
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("GPU telemetry unavailable on n1", r.stderr)


class NvidiaSmiTest(unittest.TestCase):
    def test_reads_the_lms_child_and_processes(self):
        with tempfile.TemporaryDirectory() as d:
            env = fake_smi.install(d, gpus=4)
            with mock.patch.dict(os.environ, env):
                b = NvidiaSmiBackend(interval=0.1)
                try:
                    s = GpuSampler(lambda batch: None, node="10.0.0.7", backend=b)
                    with self.assertLogs("rlsight.gpu_sampler", "WARNING") as logs:
                        out = s.sample_once(5.0)
                    # gpu 3 reads [N/A]: unknown, not 0 W
                    self.assertEqual(out, [(5.0, "10.0.0.7", i, (10 + 20 * i) % 101, 40000 + i, NO_POWER_W if i == 3 else 300 + i) for i in range(4)])
                    self.assertIn("nvidia-smi reports no power draw for gpu 3 on 10.0.0.7", logs.output[0])
                    procs = s.sample_processes_once(6.0)
                    self.assertIn((6.0, "10.0.0.7", 2, 4002, "sglang::scheduler", 30002), procs)
                    self.assertIn((6.0, "10.0.0.7", 2, 5002, "pid 5002", 100), procs)
                finally:
                    b.close()

    def test_a_dead_child_is_started_again(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "calls.log")
            env = fake_smi.install(d, gpus=1, die_after=2, log=log)
            with mock.patch.dict(os.environ, env):
                b = NvidiaSmiBackend(interval=0.1)
                try:
                    deadline = time.time() + 20
                    while b.respawns < 2 and time.time() < deadline:
                        b.count()
                        time.sleep(0.1)
                    self.assertGreaterEqual(b.respawns, 2)
                    with open(log) as f:
                        self.assertGreaterEqual(sum("-lms" in l for l in f), 2)
                finally:
                    b.close()

    def sample_until(self, s, done, seconds=20):
        """Samples every 0.05 s until ``done(rows)`` holds; the rows that made it hold (None if none did in time)."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            out = s.sample_once(time.time())
            if done(out):
                return out
            time.sleep(0.05)
        return None

    def test_a_silent_child_is_stale_skipped_and_replaced(self):
        with tempfile.TemporaryDirectory() as d:
            with mock.patch.dict(os.environ, fake_smi.install(d, gpus=2, hang_after=2)):
                b = NvidiaSmiBackend(interval=0.1)
                try:
                    s = GpuSampler(lambda batch: None, node="n", backend=b)
                    with self.assertLogs("rlsight.gpu_sampler", "WARNING") as logs:
                        self.assertIsNotNone(self.sample_until(s, lambda out: len(out) == 2))
                        # the child stops printing: its last rows are not served as new readings
                        self.assertEqual(self.sample_until(s, lambda out: out == []), [])
                        deadline = time.time() + 20
                        while b.respawns < 1 and time.time() < deadline:
                            b.count()
                            time.sleep(0.05)
                    self.assertGreaterEqual(b.respawns, 1, "the silent child is replaced")
                    said = "\n".join(logs.output)
                    self.assertIn("nvidia-smi read failed for gpu 0 on n (its newest nvidia-smi reading is", said)
                    self.assertIn("nvidia-smi printed no reading for", said)
                    # the new child reads again (it too prints two ticks)
                    self.assertIsNotNone(self.sample_until(s, lambda out: len(out) == 2))
                finally:
                    b.close()

    def test_a_gpu_off_the_bus_is_skipped(self):
        for form, said in [("index", "(nvidia-smi: Unable to determine the device handle for GPU1: 0000:3B:00.0: Unknown Error)"),
                           # the line naming only a bus id names no index: the GPU's row goes stale
                           ("bus", "(its newest nvidia-smi reading is")]:
            with tempfile.TemporaryDirectory() as d:
                with mock.patch.dict(os.environ, fake_smi.install(d, gpus=3, lost="1:" + form)):
                    b = NvidiaSmiBackend(interval=0.1)
                    try:
                        s = GpuSampler(lambda batch: None, node="n", backend=b)
                        with self.assertLogs("rlsight.gpu_sampler", "WARNING") as logs:
                            out = self.sample_until(s, lambda out: [r[2] for r in out] == [0, 2])
                        self.assertIsNotNone(out, form)
                        self.assertEqual([r[3:5] for r in out], [(10, 40000), (50, 40002)], form)
                        self.assertIn("nvidia-smi read failed for gpu 1 on n " + said, "\n".join(logs.output), form)
                        self.assertEqual(b.respawns, 0, "a child that prints is kept")
                    finally:
                        b.close()

    def test_smi_that_cannot_reach_the_driver_is_no_gpu(self):
        with tempfile.TemporaryDirectory() as d:
            with mock.patch.dict(os.environ, fake_smi.install(d, gpus=0)):
                with self.assertRaisesRegex(gpu_sampler.Unavailable, "exited 9"):
                    NvidiaSmiBackend()


class AmdTest(unittest.TestCase):
    def test_native_units_socket_power_and_process_filter(self):
        a = types.SimpleNamespace()
        a.amdsmi_init = lambda: None
        a.amdsmi_shut_down = lambda: None
        a.amdsmi_get_processor_handles = lambda: ["h0", "h1"]
        a.amdsmi_get_gpu_device_uuid = lambda h: "uuid-" + h
        a.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 77}
        a.amdsmi_get_gpu_vram_usage = lambda h: {"vram_used": 12345}
        a.amdsmi_get_power_info = lambda h: {"socket_power": "N/A", "current_socket_power": 250} if h == "h0" else {"socket_power": "N/A"}
        a.amdsmi_get_gpu_process_list = lambda h: [{"pid": 1, "name": "N/A", "memory_usage": {"vram_mem": 3 << 20}}, {"pid": 2, "name": "x", "memory_usage": {"vram_mem": 0}}]
        s = GpuSampler(lambda b: None, node="n", backend=AmdSmiBackend(a))
        with self.assertLogs("rlsight.gpu_sampler", "WARNING"):
            self.assertEqual(s.sample_once(1.0), [(1.0, "n", 0, 77, 12345, 250), (1.0, "n", 1, 77, 12345, NO_POWER_W)])
        self.assertEqual(s.sample_processes_once(2.0), [(2.0, "n", 0, 1, "pid 1", 3), (2.0, "n", 1, 1, "pid 1", 3)])
        with self.assertRaisesRegex(ValueError, "socket power unavailable"):
            _amd_socket_power({"socket_power": 0xFFFF})


class ThreadTest(unittest.TestCase):
    def test_thread_samples_and_stop_flushes(self):
        pushed = []
        s = GpuSampler(pushed.append, node="n", interval=0.02, backend=NvmlBackend(fake_nvml(count=1)))
        self.assertTrue(s.start())
        time.sleep(0.2)
        s.stop()
        rows = [r for batch in pushed for r in batch]
        self.assertGreaterEqual(len(rows), 3)

    def test_interval_must_be_positive(self):
        with self.assertRaises(AssertionError):
            GpuSampler(lambda b: None, node="n", interval=0, backend=NvmlBackend(fake_nvml()))


if __name__ == "__main__":
    unittest.main()
