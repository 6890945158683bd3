"""Drives the rlsight Python client through three training steps against a live collector, with a GPU
sampler reading a stand-in nvidia-smi. Prints one JSON line: what it sent and its worst call latency."""

import json
import os
import sys
import tempfile
import time

run_dir, engine = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from tests import fake_smi  # noqa: E402

smi_dir = tempfile.mkdtemp()
os.environ.update(fake_smi.install(smi_dir, gpus=4))
sys.modules["pynvml"] = None  # no NVML here: the nvidia-smi child is used
sys.modules["amdsmi"] = None

import rlsight  # noqa: E402
from rlsight.gpu_sampler import GpuSampler  # noqa: E402

client = rlsight.connect(dump_details=run_dir, node="10.0.0.1", gpus=[], rank=-1, batch_seconds=0.2)
sampler = GpuSampler(client.gpu_samples, node="10.0.0.1", interval=0.2, push_processes=client.gpu_processes,
                     process_interval=0.5, flush_interval=0.5)
assert sampler.start(), "the stand-in nvidia-smi should be found"
worst = 0.0


def timed(fn, *args, **kwargs):
    global worst
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    worst = max(worst, time.perf_counter() - t)
    return out


client.topology([{"addr": engine, "gpus": [["10.0.0.1", 0], ["10.0.0.1", 1]], "gpu_uuids": ["GPU-00000000-fake", "GPU-00000001-fake"]}])
sent = {"phases": 0, "metrics": [], "trajectories": 0, "data_buffer": 0}
for step in range(3):
    p = client.phase("rollout", role="rollout_manager", rank=-1, gpus=[])
    timed(p.__enter__)
    for i in range(4):
        idx = step * 4 + i
        timed(client.attempt_start, idx, group_index=i // 2, weight_version=str(step))
        now = time.time()
        timed(client.gen_span, idx, now, now + 0.01, 1, group_index=i // 2, weight_version=str(step), detail="12")
        timed(client.attempt_end, idx, group_index=i // 2, weight_version=str(step), status="completed")
        sent["trajectories"] += 4
    timed(p.__exit__, None, None, None)
    sent["phases"] += 2
    timed(client.data_buffer, 10 - step)
    sent["data_buffer"] += 1
    for rank in range(4):
        ph = client.phase("actor_train", role="train", rank=rank, gpus=[rank])
        timed(ph.__enter__)
        time.sleep(0.01)
        timed(ph.__exit__, None, None, None)
        sent["phases"] += 2
    metrics = {"train/loss": 1.5 - 0.25 * step, "train/grad_norm": 2.0, "train/step": step}
    timed(client.log, metrics, step=step, step_key="train/step")
    sent["metrics"].append(metrics)
    time.sleep(0.3)

time.sleep(1.2)  # the sampler pushes twice more
sampler.stop()
ok = client.close(timeout=20)
print(json.dumps({"sent": sent, "worst_call_us": worst * 1e6, "stats": client.stats(), "closed_ok": ok}))
