"""GPU sampler: reads every GPU of this node once a second (NVML through ``pynvml``, else an
``nvidia-smi --query-gpu=... -lms`` child process, else AMD SMI through ``amdsmi``), reads per-process
GPU memory every 5 seconds, and pushes batches every 5 seconds.

    python -m rlsight.gpu_sampler --dump-details DIR        # or --collector URL --token T

No GPU (or no telemetry library) logs one line and samples nothing; it never crashes.
"""

import argparse
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse

logger = logging.getLogger("rlsight.gpu_sampler")

PROCESS_SAMPLE_INTERVAL_SECONDS = 5.0
FLUSH_INTERVAL_SECONDS = 5.0
SMI_QUERY = "index,uuid,utilization.gpu,memory.used,power.draw"
# a reading older than this many sampling intervals is not reported (the GPU is skipped, as for a failed read)
STALE_INTERVALS = 3
# the line nvidia-smi prints in place of a GPU's row when it cannot reach that GPU (fallen off the bus)
# (the index form, "GPU1: 0000:3B:00.0: Unknown Error"; the form naming only the PCI bus id, "GPU0000:3B:00.0: ...", maps
# to no index here, and that GPU is skipped once its last row is stale)
_SMI_LOST_GPU = re.compile(r"Unable to determine the device handle for GPU ?(\d{1,3}):\s")
# power_w of a GPU that reports no power draw: the record needs a number, and no reading is negative
NO_POWER_W = -1


class Unavailable(Exception):
    pass


def _int(text):
    """An SMI number (``"45"``, ``"301.52"``); ``[N/A]`` and friends raise ValueError."""
    return int(float(text))


# ---------------------------------------------------------------------------------------- backends


class NvmlBackend:
    name = "NVML"

    def __init__(self, nvml=None):
        if nvml is None:
            import pynvml as nvml  # noqa: F811 (optional dependency)
        self.nvml = nvml
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            raise Unavailable("no NVML devices")
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self.uuids = []
        for h in self.handles:
            u = nvml.nvmlDeviceGetUUID(h)
            self.uuids.append(u.decode() if isinstance(u, bytes) else u)

    def read(self, i):
        """(util %, used MiB, watts or None when the board reports no power draw)."""
        n, h = self.nvml, self.handles[i]
        util, mem = int(n.nvmlDeviceGetUtilizationRates(h).gpu), int(n.nvmlDeviceGetMemoryInfo(h).used) >> 20
        try:
            power = int(n.nvmlDeviceGetPowerUsage(h)) // 1000
        except Exception:  # NVML_ERROR_NOT_SUPPORTED on boards without power readings
            power = None
        return util, mem, power

    def count(self):
        return len(self.handles)

    def processes(self, i):
        n = self.nvml
        out = []
        for p in n.nvmlDeviceGetComputeRunningProcesses(self.handles[i]):
            try:
                name = n.nvmlSystemGetProcessName(p.pid)
                name = name.decode() if isinstance(name, bytes) else name
            except Exception:
                name = "pid %d" % p.pid
            out.append((int(p.pid), name, int(p.usedGpuMemory or 0) >> 20))
        return out

    def close(self):
        try:
            self.nvml.nvmlShutdown()
        except Exception:
            pass


class NvidiaSmiBackend:
    """A long-lived ``nvidia-smi --query-gpu=... -lms N`` child; respawned if it dies."""

    name = "nvidia-smi"

    def __init__(self, interval=1.0, smi="nvidia-smi"):
        self.smi = shutil.which(smi)
        if self.smi is None:
            raise Unavailable("nvidia-smi not found on PATH")
        self.interval_ms = max(100, int(interval * 1000))
        began = time.monotonic()
        try:
            first = subprocess.run([self.smi, "--query-gpu=" + SMI_QUERY, "--format=csv,noheader,nounits"],
                                   capture_output=True, text=True, timeout=10)
        except Exception as err:
            raise Unavailable("nvidia-smi failed: %s" % err)
        if first.returncode != 0:
            raise Unavailable("nvidia-smi exited %d: %s" % (first.returncode, first.stderr.strip()[:200]))
        # a row older than this is not a reading of now (the child hangs in a wedged driver call, or stopped listing
        # the GPU): three intervals, or three times as long as its first answer took (a row comes every interval plus
        # the query's own time); a child silent for that long is replaced
        self.stale_seconds = max(STALE_INTERVALS * self.interval_ms / 1000.0, STALE_INTERVALS * (time.monotonic() - began))
        self.silent_seconds = self.stale_seconds
        #: gpu index → (arrival time, [uuid, util, mem, power] or None, the line nvidia-smi printed for a GPU it cannot read)
        self.latest = {}
        self._uuids = {}
        self.last_line = time.monotonic()
        self.lock = threading.Lock()
        for line in first.stdout.splitlines():
            self._take(line)
        if not self._uuids:
            raise Unavailable("nvidia-smi lists no GPUs")
        self.proc = None
        self.respawns = -1
        self.silent_kills = 0
        self.closed = False
        self._spawn()

    def _take(self, line):
        now = time.monotonic()
        lost = _SMI_LOST_GPU.match(line.strip())
        if lost is not None:
            with self.lock:
                self.latest[int(lost.group(1))] = (now, None, line.strip())
            return
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5 or not parts[0].isdigit():
            return
        with self.lock:
            self.latest[int(parts[0])] = (now, parts[1:], None)
            self._uuids[int(parts[0])] = parts[1]
            self.last_line = now

    def _spawn(self):
        self.respawns += 1
        self.spawned = time.monotonic()
        self.proc = subprocess.Popen([self.smi, "--query-gpu=" + SMI_QUERY, "--format=csv,noheader,nounits",
                                      "-lms", str(self.interval_ms)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        proc = self.proc
        threading.Thread(target=self._pump, args=(proc,), name="rlsight-nvidia-smi", daemon=True).start()

    def _pump(self, proc):
        try:
            for line in proc.stdout:
                self._take(line)
        except (ValueError, OSError):  # closed by close()
            pass
        finally:
            proc.stdout.close()

    def _alive(self):
        if self.closed:
            return
        if self.proc.poll() is not None:
            logger.warning("nvidia-smi exited (%s); starting it again", self.proc.returncode)
        else:
            with self.lock:
                if self.last_line >= self.spawned:
                    self.silent_kills = 0
                silent = time.monotonic() - max(self.last_line, self.spawned)
            # a wedged driver wedges each new child too: the wait doubles with every child killed in a row
            if silent <= self.silent_seconds * 2 ** min(self.silent_kills, 7):
                return
            # a child that prints nothing is stuck (in the driver, as for a GPU that fell off the bus): its rows
            # are stale already, and a new one may read again
            logger.warning("nvidia-smi printed no reading for %.1fs; killing it and starting it again", silent)
            self.silent_kills += 1
            self.proc.kill()
            try:
                self.proc.wait(timeout=1)
            except Exception:
                pass
        self._spawn()

    @property
    def uuids(self):
        with self.lock:
            return [self._uuids.get(i, "") for i in range(max(self.latest) + 1)]

    def count(self):
        self._alive()
        with self.lock:
            return max(self.latest) + 1 if self.latest else 0

    def read(self, i):
        with self.lock:
            entry = self.latest.get(i)
        if entry is None:
            raise ValueError("no reading for gpu %d yet" % i)
        arrived, row, lost = entry
        if lost is not None:
            raise ValueError("nvidia-smi: %s" % lost)
        age = time.monotonic() - arrived
        if age > self.stale_seconds:
            raise ValueError("its newest nvidia-smi reading is %.1fs old" % age)
        _, util, mem, power = row
        try:
            power_w = _int(power)
        except ValueError:
            power_w = None  # [N/A]: the board reports no power draw
        return _int(util), _int(mem), power_w

    def processes_all(self):
        r = subprocess.run([self.smi, "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
        if r.returncode != 0:
            raise RuntimeError("nvidia-smi exited %d" % r.returncode)
        with self.lock:
            index_of = {u: i for i, u in self._uuids.items()}
        out = {}
        for line in r.stdout.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 4 or parts[0] not in index_of:
                continue
            try:
                pid, mem = int(parts[1]), _int(parts[3])
            except ValueError:
                continue
            name = parts[2] if parts[2] and parts[2] != "[N/A]" else "pid %d" % pid
            out.setdefault(index_of[parts[0]], []).append((pid, name, mem))
        return out

    def close(self):
        self.closed = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()


def _amd_socket_power(info):
    for key in ("socket_power", "current_socket_power", "average_socket_power"):
        v = info.get(key)
        if v is None or v == "N/A":
            continue
        try:
            v = int(v)
        except (TypeError, ValueError):
            continue
        if 0 <= v < 0xFFFF:
            return v
    raise ValueError("socket power unavailable")


class AmdSmiBackend:
    name = "AMD SMI"

    def __init__(self, amdsmi=None):
        if amdsmi is None:
            import amdsmi  # noqa: F811 (optional dependency)
        self.amd = amdsmi
        amdsmi.amdsmi_init()
        self.handles = list(amdsmi.amdsmi_get_processor_handles())
        if not self.handles:
            raise Unavailable("no AMD SMI devices")
        self.uuids = [amdsmi.amdsmi_get_gpu_device_uuid(h) for h in self.handles]

    def count(self):
        return len(self.handles)

    def read(self, i):
        a, h = self.amd, self.handles[i]
        util = int(a.amdsmi_get_gpu_activity(h)["gfx_activity"])
        mem = int(a.amdsmi_get_gpu_vram_usage(h)["vram_used"])
        try:
            power = _amd_socket_power(a.amdsmi_get_power_info(h))
        except Exception:
            power = None
        return util, mem, power

    def processes(self, i):
        out = []
        for p in self.amd.amdsmi_get_gpu_process_list(self.handles[i]):
            mem = int((p.get("memory_usage") or {}).get("vram_mem") or 0) >> 20
            if mem == 0:
                continue
            name = p.get("name")
            out.append((int(p["pid"]), name if name and name != "N/A" else "pid %d" % p["pid"], mem))
        return out

    def close(self):
        try:
            self.amd.amdsmi_shut_down()
        except Exception:
            pass


def detect_backend(interval=1.0):
    """The first GPU telemetry source that works here, or (None, reasons)."""
    reasons = []
    for make in (NvmlBackend, lambda: NvidiaSmiBackend(interval), AmdSmiBackend):
        try:
            return make(), reasons
        except ImportError as err:
            reasons.append("%s" % err)
        except Exception as err:
            reasons.append("%s" % err)
    return None, reasons


# ----------------------------------------------------------------------------------------- sampler


class GpuSampler:
    """Samples every ``interval`` seconds; pushes ``(ts, node, gpu, util, mem_mb, power_w)`` batches
    (``power_w`` is ``NO_POWER_W`` for a GPU that reports no power draw)."""

    def __init__(self, push, *, node, interval=1.0, push_processes=None, backend=None,
                 process_interval=PROCESS_SAMPLE_INTERVAL_SECONDS, flush_interval=FLUSH_INTERVAL_SECONDS):
        assert interval > 0, "interval must be positive"
        self.push = push
        self.push_processes = push_processes
        self.node = node
        self.interval = interval
        self.process_interval = process_interval
        self.flush_interval = flush_interval
        if backend is None:
            backend, reasons = detect_backend(interval)
            if backend is None:
                logger.warning("GPU telemetry unavailable on %s (%s); GPU utilization will not be collected",
                               node, "; ".join(reasons))
        self.backend = backend
        self.available = backend is not None
        self._buf = []
        self._pbuf = []
        self._stop = threading.Event()
        self._thread = None
        self._warned = set()

    def _warn_once(self, key, message, *args):
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, *args)

    def sample_once(self, ts):
        """One reading of every GPU, all stamped ``ts``; a GPU whose read fails is skipped this tick, and
        one that reports no power draw gets ``NO_POWER_W``."""
        out = []
        for i in range(self.backend.count()):
            try:
                util, mem, power = self.backend.read(i)
            except Exception as err:
                self._warn_once(("read", i), "%s read failed for gpu %d on %s (%s); skipping this tick",
                                self.backend.name, i, self.node, err)
                continue
            if power is None:
                self._warn_once("power", "%s reports no power draw for gpu %d on %s; power_w %d marks it unknown",
                                self.backend.name, i, self.node, NO_POWER_W)
                power = NO_POWER_W
            out.append((ts, self.node, i, util, mem, power))
        self._buf.extend(out)
        return out

    def sample_processes_once(self, ts):
        out = []
        if hasattr(self.backend, "processes_all"):
            try:
                per_gpu = self.backend.processes_all()
            except Exception as err:
                self._warn_once("procs", "%s process query failed on %s (%s); skipping this tick", self.backend.name, self.node, err)
                per_gpu = {}
        else:
            per_gpu = {}
            for i in range(self.backend.count()):
                try:
                    per_gpu[i] = self.backend.processes(i)
                except Exception as err:
                    self._warn_once(("procs", i), "%s process query failed for gpu %d on %s (%s); skipping this tick",
                                    self.backend.name, i, self.node, err)
        for gpu in sorted(per_gpu):
            for pid, name, mem in per_gpu[gpu]:
                out.append((ts, self.node, gpu, pid, name, mem))
        self._pbuf.extend(out)
        return out

    def flush(self):
        batch, self._buf = self._buf, []
        pbatch, self._pbuf = self._pbuf, []
        if batch:
            self.push(batch)
        if pbatch and self.push_processes is not None:
            self.push_processes(pbatch)

    def _loop(self):
        next_procs = 0.0
        next_flush = time.monotonic() + self.flush_interval
        while not self._stop.is_set():
            try:
                self.sample_once(time.time())
                now = time.monotonic()
                if self.push_processes is not None and now >= next_procs:
                    self.sample_processes_once(time.time())
                    next_procs = now + self.process_interval
                if now >= next_flush:
                    self.flush()
                    next_flush = now + self.flush_interval
            except Exception as err:  # a sampler must outlive its GPU's hiccups
                self._warn_once("loop", "GPU sampling failed on %s (%s); continuing", self.node, err)
            self._stop.wait(self.interval)

    def start(self):
        """Starts the sampling thread; False (and nothing started) when no GPU telemetry is available."""
        if not self.available:
            return False
        self._thread = threading.Thread(target=self._loop, name="rlsight-gpu-sampler", daemon=True)
        self._thread.start()
        return True

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.interval + 5)
        if self.available:
            try:
                self.flush()
            finally:
                self.backend.close()


def _seconds(text):
    try:
        v = float(text)
    except ValueError:
        v = None
    if v is None or not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError("expected a positive number of seconds, got %r" % text)
    return v


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m rlsight.gpu_sampler", description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--dump-details", metavar="DIR", help="the run directory (the collector is found through dashboard/collector.json; "
                                              "default $RLSIGHT_DUMP_DETAILS)")
    where.add_argument("--collector", metavar="URL", help="collector URL, http(s)://HOST:PORT (instead of --dump-details)")
    parser.add_argument("--token", metavar="TOKEN", help="the run's token (with --collector)")
    parser.add_argument("--node", metavar="IP", help="this node's IP as the lanes name it (default: detected)")
    parser.add_argument("--interval", metavar="SECONDS", type=_seconds, default=1.0, help="seconds between samples (default 1)")
    args = parser.parse_args(argv)
    if args.collector is not None:
        url = urllib.parse.urlsplit(args.collector)
        try:
            url.port
        except ValueError:
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.hostname:
            parser.error("--collector: expected an http:// or https:// URL, got %r" % args.collector)
        if not args.token:
            parser.error("--collector needs --token (the token in the run's dashboard/collector.json)")
    elif args.dump_details is None and not os.environ.get("RLSIGHT_DUMP_DETAILS"):
        parser.error("give --dump-details DIR (or set RLSIGHT_DUMP_DETAILS) or --collector URL --token TOKEN")
    elif args.dump_details == "":
        parser.error("--dump-details: expected the run directory, got ''")
    return args


def main(argv=None):
    args = _parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    from . import connect, identity

    node = args.node or identity.node_ip()
    client = connect(args.dump_details, collector=args.collector, token=args.token, node=node)
    sampler = GpuSampler(client.gpu_samples, node=node, interval=args.interval, push_processes=client.gpu_processes)
    if not sampler.start():
        # the reason was logged by the sampler; a supervisor sees the failure in the exit status
        client.close(timeout=1.0)
        return 1
    logger.info("sampling %d GPU(s) on %s through %s every %gs", sampler.backend.count(), node, sampler.backend.name, args.interval)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(1.0):
        pass
    sampler.stop()
    client.close(timeout=5.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
