"""A stand-in slime trainer: the samples of the slime fixture (decoded from slime's own dumps) as objects with
slime's Sample fields, Status enum, SpecInfo/PrefixCacheInfo and to_dict(), handed to the rlsight hooks the way
slime's RolloutManager calls them (2 train rollouts, then 1 evaluation split by dataset). Prints one JSON line."""

import enum
import json
import os
import sys
import types

FIXTURE = sys.argv[1]
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from rlsight.integrations import slime as hooks  # noqa: E402


class Tensor:
    """What torch.as_tensor(...).tolist() gives back; the hooks only read it as a list."""

    def __init__(self, data):
        self.data = data

    def tolist(self):
        return list(self.data)


_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def python_values(v):
    """The decoded fixture writes slime's non-finite floats as the strings NaN/Infinity/-Infinity (no real string
    holds that text): back to the floats slime had."""
    if isinstance(v, str):
        return _NON_FINITE.get(v, v)
    if isinstance(v, list):
        return [python_values(x) for x in v]
    if isinstance(v, dict) and not v.get("__tensor__"):
        return {k: python_values(x) for k, x in v.items()}
    return v


class Sample:
    class Status(enum.Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    class SpecInfo:
        def __init__(self, d):
            self.__dict__.update(d)

        @property
        def spec_accept_rate(self):
            return self.spec_accept_token_num / self.spec_draft_token_num if self.spec_draft_token_num > 0 else 0.0

        def to_dict(self):
            return dict(self.__dict__)

    class PrefixCacheInfo(SpecInfo):
        pass

    def __init__(self, d):
        d = python_values(d)
        for k, v in d.items():
            if isinstance(v, dict) and v.get("__tensor__"):
                v = Tensor(v["data"])
            setattr(self, k, v)
        self.status = Sample.Status(d["status"])
        self.spec_info = Sample.SpecInfo(d["spec_info"])
        self.prefix_cache_info = Sample.PrefixCacheInfo(d["prefix_cache_info"])

    @property
    def effective_response_length(self):
        return sum(self.loss_mask) if self.loss_mask is not None else self.response_length

    def to_dict(self):  # slime's own: the instance dict, enums and infos as plain values
        value = self.__dict__.copy()
        value["status"] = self.status.value
        value["spec_info"] = self.spec_info.to_dict()
        value["prefix_cache_info"] = self.prefix_cache_info.to_dict()
        return value


def samples(stem):
    with open(os.path.join(FIXTURE, "decoded", stem + ".json")) as f:
        return [Sample(d) for d in json.load(f)["samples"]]


def golden(name):
    with open(os.path.join(FIXTURE, "golden", name)) as f:
        return json.load(f)


returned = []
for rollout_id in (0, 1):
    perf = golden("perf_%d.json" % rollout_id)
    args = types.SimpleNamespace(**perf["inputs"]["args"])
    returned.append(hooks.log_rollout_data(rollout_id, args, samples(str(rollout_id)),
                                           dict(perf["inputs"]["rollout_extra_metrics"]), perf["inputs"]["rollout_time"]))
ev = golden("eval_metrics_0.json")
args = types.SimpleNamespace(**ev["inputs"]["args"])
all_eval = samples("eval_0")
data, start = {}, 0
for name, n in ev["inputs"]["datasets"].items():
    part = all_eval[start:start + n]
    start += n
    data[name] = {"rewards": [s.reward for s in part], "truncated": [s.status == Sample.Status.TRUNCATED for s in part], "samples": part}
returned.append(hooks.log_eval_rollout_data(0, args, data, None))
client = hooks.client()
print(json.dumps({"returned": returned, "stats": client.stats() if client else None}))
# no close here: the integration's atexit close delivers what is still queued
