"""Logs a metric every few milliseconds through the rlsight client until STOP_FILE exists, across a
collector that is killed and restarted; prints its worst call latency and counters as one JSON line."""

import json
import os
import sys
import time

run_dir, stop_file = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import rlsight  # noqa: E402

client = rlsight.connect(dump_details=run_dir, node="10.0.0.1", gpus=[0], rank=0, batch_seconds=0.1, timeout=0.5)
worst = 0.0
step = 0
while not os.path.exists(stop_file):
    t = time.perf_counter()
    client.log({"train/loss": 1.0 / (step + 1), "train/step": step}, step=step, step_key="train/step")
    with client.phase("actor_train"):
        pass
    worst = max(worst, time.perf_counter() - t)
    step += 1
    time.sleep(0.005)
ok = client.close(timeout=20)
print(json.dumps({"steps": step, "worst_call_us": worst * 1e6, "closed_ok": ok, "stats": client.stats()}))
