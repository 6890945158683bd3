"""The producer client: queues records in the caller's thread (microseconds, never blocking) and
sends them to the collector from a daemon thread, in batches of 64 records or every 2 seconds.

A batch counts as sent once the collector answers that it is in its write-ahead log; until then it is
sent again (numbered, so the collector never takes it twice) for up to ``retry_seconds``, then dropped
and counted."""

import atexit
import collections
import functools
import json
import logging
import math
import operator
import os
import re
import threading
import time
import urllib.error
import uuid
import urllib.request
import weakref

from . import identity

logger = logging.getLogger("rlsight")

BATCH_MAX_EVENTS = 64
BATCH_MAX_SECONDS = 2.0
# a collector under load (its fsync groups, a busy disk) may take seconds to answer: a batch timed out is sent again
HTTP_TIMEOUT_SECONDS = 10.0
DEFAULT_QUEUE_SIZE = 100_000
DEFAULT_RETRY_SECONDS = 600.0
BATCH_HEADER = "X-Rlsight-Batch"
SAMPLES_STREAM = "samples"
# a samples batch stays well under the collector's default --max-batch-bytes (8 MiB)
SAMPLES_BATCH_BYTES = 4 << 20
# a sample larger than a whole batch may be is refused by the collector before it is read (the sender sees a broken
# pipe, not the refusal, and would hold every later batch back while retrying it): it is left out of its step here
SAMPLE_MAX_BYTES = (8 << 20) - 1024
# the same bound for a record of any stream (a metrics dict holding a huge string), refused before it is sent
RECORD_MAX_BYTES = SAMPLE_MAX_BYTES
# every stream's batches stay under the collector's --max-batch-bytes
BATCH_BYTES = SAMPLES_BATCH_BYTES
OPEN_T1 = -1.0
TRAJECTORY_KINDS = ("attempt_start", "gen_start", "gen_end", "tool_start", "tool_end", "attempt_end")
COLLECTOR_FILE = "collector.json"

# a lone surrogate (text decoded with surrogateescape/surrogatepass) has no UTF-8 form: it is sent as its JSON escape
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _dumps(value, **kwargs):
    """Compact JSON with non-ASCII text as itself (sent as UTF-8: an escaped é took six bytes of the batch bound, an
    emoji twelve) and lone surrogates escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, **kwargs)
    return text if text.isascii() else _LONE_SURROGATE.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def _utf8_len(text):
    """The bytes ``text`` takes in a batch (what the collector's size bounds count)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _scalars_only(metrics, left_out=None):
    """Keeps int/float/str/bool values; numpy/torch integers stay integers, other 0-d values become floats; the
    rest is dropped (its keys appended to ``left_out``)."""
    out = {}
    for k, v in metrics.items():
        if isinstance(v, (bool, int, float, str)):
            out[str(k)] = v
        elif hasattr(v, "__index__") and tuple(getattr(v, "shape", ())) == () and _index(v) is not None:
            out[str(k)] = _index(v)
        elif hasattr(v, "__float__"):
            try:
                out[str(k)] = float(v)
            except Exception:  # a tensor with more than one element
                if left_out is not None:
                    left_out.append(str(k))
        elif left_out is not None:
            left_out.append(str(k))
    return out


def _index(value):
    """The integer a numpy/torch integer scalar holds, or None (a bool, a value that refuses)."""
    try:
        return None if type(value).__name__ in ("bool_", "bool") else operator.index(value)
    except Exception:
        return None


def _step(value):
    """The integer a step given to ``log()`` holds (``4``, ``4.0``, a numpy/torch integer or integral float, ``"4"``), or
    None for one that holds none (NaN, inf, 1.5, a bool, text that is no number)."""
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        return None
    try:
        return operator.index(value)
    except Exception:
        pass
    try:
        f = float(value)
    except Exception:
        return None
    return int(f) if math.isfinite(f) and f.is_integer() else None


def _plain(value):
    """JSON for what json cannot encode: tensors and arrays as lists, numpy scalars as numbers, else str()."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "__float__"):
        try:
            return float(value)
        except Exception:
            pass
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


# generic names a trainer may use, and the sample field each one is recorded as
_SAMPLE_ALIASES = {"group": "group_index", "messages": "prompt", "finish_reason": "status", "sample_index": "index",
                   "old_log_probs": "log_probs", "advantage": "advantages"}


def _sample_fields(sample):
    """A sample as a plain dict: ``to_dict()`` for objects that have it (slime's Sample), else a copy with generic names
    mapped to the recorded ones; a dict reward with ``reward_key`` keeps the scalar as ``reward``, the dict as ``reward_detail``."""
    if hasattr(sample, "to_dict"):
        return sample.to_dict()
    fields = {}
    for k, v in dict(sample).items():
        k = _SAMPLE_ALIASES.get(k, k)
        if k not in fields:
            fields[k] = v
    reward, key = fields.get("reward"), fields.get("reward_key")
    if isinstance(reward, dict) and key in reward:
        fields["reward_detail"] = reward
        fields["reward"] = reward[key]
    if "response_length" not in fields and isinstance(fields.get("loss_mask"), list):
        fields["response_length"] = len(fields["loss_mask"])
    return fields


class _RateLimited:
    """One warning per message kind per window, so a dead collector does not flood the log."""

    def __init__(self, window=300.0):
        self.window = window
        self.last = {}

    def warn(self, key, message, *args):
        now = time.monotonic()
        if now - self.last.get(key, -1e18) >= self.window:
            self.last[key] = now
            logger.warning(message + " (further warnings suppressed for %ds)", *args, int(self.window))


class _Phase:
    """`with client.phase(...)` and `@client.phase(...)`: one open marker at entry, the closed interval at exit."""

    __slots__ = ("_client", "_name", "_role", "_rank", "_gpus", "_node", "_t0")

    def __init__(self, client, name, role, rank, gpus, node):
        self._client = client
        self._name = name
        self._role = role
        self._rank = rank
        self._gpus = gpus
        self._node = node
        self._t0 = None

    def __enter__(self):
        t0 = time.time()
        self._t0 = t0
        self._client._phase_event(self._name, t0, OPEN_T1, self._role, self._rank, self._gpus, self._node)
        return self

    def __exit__(self, *exc):
        self._client._phase_event(self._name, self._t0, time.time(), self._role, self._rank, self._gpus, self._node)
        return False

    def __call__(self, fn):
        client, name, role, rank, gpus, node = self._client, self._name, self._role, self._rank, self._gpus, self._node

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _Phase(client, name, role, rank, gpus, node):
                return fn(*args, **kwargs)

        return wrapper


class Client:
    """Sends records to one collector. Use ``connect()`` to build one from a run directory."""

    def __init__(self, address, token, *, dashboard_dir=None, node=None, gpus=None, rank=None,
                 queue_size=DEFAULT_QUEUE_SIZE, batch_size=BATCH_MAX_EVENTS, batch_seconds=BATCH_MAX_SECONDS,
                 timeout=HTTP_TIMEOUT_SECONDS, retry_seconds=DEFAULT_RETRY_SECONDS, register_atexit=True):
        # address None: the collector has not started yet; it is looked for in dashboard_dir before each send
        self.address = address.rstrip("/") if address else None
        self.token = token
        self._producer = uuid.uuid4().hex[:16]
        self._seq = 0
        self._calls = 0
        self._retry_seconds = float(retry_seconds)
        self._dashboard_dir = dashboard_dir
        self._node = node
        self._gpus = list(gpus) if gpus is not None else None
        self._rank = rank
        self._rank_checked = -1e18
        self._queue = collections.deque()
        self._queue_size = int(queue_size)
        self._batch_size = int(batch_size)
        self._batch_seconds = float(batch_seconds)
        self._timeout = float(timeout)
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._pending = []  # [stream, [line, ...], seq, first_try] batches not yet acknowledged, retried first
        self._failing = False  # the last send failed: the sender waits its back-off
        self._warn = _RateLimited()
        self._close_hooks = []
        # counters (read them for diagnostics; they only grow)
        self.queued = 0
        self.sent = 0
        self.dropped = 0
        self.rejected = 0
        self.send_failures = 0
        self._thread = threading.Thread(target=self._run, name="rlsight-sender", daemon=True)
        self._thread.start()
        if register_atexit:
            atexit.register(self._at_exit)
        # a forked child (a dataloader worker) has no sender thread: it gets its own, a new producer id (the
        # collector would take its batches for the parent's) and none of the parent's records
        if hasattr(os, "register_at_fork"):
            me = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: me() is not None and me()._after_fork())

    def _after_fork(self):
        self._producer = uuid.uuid4().hex[:16]
        self._seq = 0
        self._calls = 0
        self._queue = collections.deque()
        self._pending = []
        self._failing = False
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self.queued = self.sent = self.dropped = self.rejected = self.send_failures = 0
        if not self._closed:
            self._thread = threading.Thread(target=self._run, name="rlsight-sender", daemon=True)
            self._thread.start()

    # ----------------------------------------------------------------- identity

    @property
    def dashboard_dir(self):
        """The run's ``dashboard/`` folder its collector is found in (None for a client given an address only)."""
        return self._dashboard_dir

    @property
    def node(self):
        if self._node is None:
            self._node = identity.node_ip()
        return self._node

    @property
    def gpus(self):
        if self._gpus is None:
            self._gpus = identity.visible_gpus()
        return self._gpus

    def _rank_now(self):
        # an unknown rank is looked up again (torch.distributed may initialise later), at most once a second
        now = time.monotonic()
        if (self._rank is None or self._rank < 0) and now - self._rank_checked >= 1.0:
            self._rank_checked = now
            self._rank = identity.rank()
        return -1 if self._rank is None else self._rank

    # ------------------------------------------------------------------ records

    def _after_close(self):
        # nothing sends any more: counted as dropped, said once
        self.dropped += 1
        self._warn.warn("closed", "rlsight client is closed: records given to it are dropped (connect() again for a new one)")

    def _put(self, stream, record):
        # record is a tuple in field order; the sender thread encodes it
        if self._closed:
            return self._after_close()
        q = self._queue
        if len(q) >= self._queue_size:
            try:
                q.popleft()
                self.dropped += 1
            except IndexError:
                pass
        q.append((stream, record))
        self.queued += 1
        if len(q) >= self._batch_size:
            self._wake.set()

    def _phase_event(self, name, t0, t1, role, rank, gpus, node):
        # the hot path of every phase: no property or helper call once the identity is known
        try:
            if self._closed:
                return self._after_close()
            if node is None:
                node = self._node if self._node is not None else self.node
            if gpus is None:
                gpus = self._gpus if self._gpus is not None else self.gpus
            if not gpus:
                self._warn.warn("phase without gpus",
                                "rlsight phase %r names no GPU (CUDA_VISIBLE_DEVICES unset, or not GPU indices): it is recorded "
                                "but drawn on no GPU lane; give gpus=[...] to connect() or phase()", name)
            if rank is None:
                rank = self._rank
                if rank is None or rank < 0:
                    rank = self._rank_now()
            q = self._queue
            if len(q) >= self._queue_size:
                q.popleft()
                self.dropped += 1
            q.append(("phases", (name, t0, t1, node, gpus, rank, role)))
            self.queued += 1
            if len(q) >= self._batch_size:
                self._wake.set()
        except Exception:  # never into training
            self._warn.warn("phase", "rlsight phase event failed; dropping it")

    def phase(self, name, role="train", *, rank=None, gpus=None, node=None):
        """A timed phase, as a context manager or a decorator. Identity is detected once unless given."""
        return _Phase(self, str(name), str(role), rank, list(gpus) if gpus is not None else None, node)

    def log(self, metrics, step=None, step_key=None):
        """One tracking call: scalar metrics against ``step_key`` (e.g. ``"train/step"``)."""
        try:
            left_out = []
            values = _scalars_only(metrics, left_out)
            if left_out:
                self._warn.warn("log not scalar", "rlsight log() keeps scalar values only: left out %s",
                                ", ".join(sorted(left_out)[:10]))
            kept = values.get(step_key) if step_key is not None else None
            # the step carried in the metrics themselves: an integer, or a float holding one (4.0)
            if step is None and not isinstance(kept, bool) and (isinstance(kept, int) or (isinstance(kept, float) and kept.is_integer())):
                step = int(kept)
            elif step is not None:
                given, step = step, _step(step)
                if step is None:
                    # a step computed from a tensor may be NaN: the metrics are worth keeping on wall time
                    self._warn.warn("log bad step %r" % (step_key,), "rlsight log(step=%r) for step_key %r is not a finite integer: "
                                    "the metrics are kept without a step (on wall time only)", given, step_key)
            if step is not None and step_key is not None and step_key not in values:
                values[step_key] = step
            self._put("metrics", (time.time(), step_key, step, values))
            if step is not None and step_key is None and not self._closed:
                self._warn.warn("log step without key", "rlsight log(step=...) without step_key: the step has no axis to be "
                                "drawn on (wall time only); give step_key=\"train/step\" or the key your trainer counts steps by")
        except Exception:
            self._warn.warn("log", "rlsight metric log failed; dropping this call")

    def trajectory(self, kind, sample_index, group_index=-1, turn=-1, weight_version="", detail="", ts=None):
        """One lifecycle boundary of one sample (kinds: attempt_start, gen_start, gen_end, tool_start, tool_end, attempt_end)."""
        try:
            if kind not in TRAJECTORY_KINDS:
                raise ValueError(kind)
            self._put("trajectories", (time.time() if ts is None else float(ts), kind, int(sample_index), int(group_index),
                                       int(turn), str(weight_version), str(detail)))
        except Exception:
            self._warn.warn("trajectory", "rlsight trajectory event failed (kind %r); dropping it", kind)

    def attempt_start(self, sample_index, group_index=-1, weight_version="", ts=None):
        self.trajectory("attempt_start", sample_index, group_index, -1, weight_version, "", ts)

    def attempt_end(self, sample_index, group_index=-1, weight_version="", status="completed", ts=None):
        self.trajectory("attempt_end", sample_index, group_index, -1, weight_version, status, ts)

    def gen_span(self, sample_index, t0, t1, turn, group_index=-1, weight_version="", detail=""):
        self.trajectory("gen_start", sample_index, group_index, turn, weight_version, detail, t0)
        self.trajectory("gen_end", sample_index, group_index, turn, weight_version, detail, t1)

    def tool_span(self, sample_index, t0, t1, turn, group_index=-1, weight_version="", detail=""):
        self.trajectory("tool_start", sample_index, group_index, turn, weight_version, detail, t0)
        self.trajectory("tool_end", sample_index, group_index, turn, weight_version, detail, t1)

    def topology(self, engines, ts=None):
        """The full engine topology: dicts with addr, and optionally worker_type, engine_rank, gpus ([node, gpu] pairs), gpu_uuids."""
        try:
            out = []
            for i, e in enumerate(engines):
                gpus = [[str(n), int(g)] for n, g in e.get("gpus", [])]
                uuids = list(e.get("gpu_uuids", [None] * len(gpus)))
                out.append({"addr": str(e["addr"]), "worker_type": str(e.get("worker_type", "regular")),
                            "engine_rank": int(e.get("engine_rank", i)), "gpus": gpus, "gpu_uuids": uuids})
            self._put("topology", (time.time() if ts is None else float(ts), out))
        except Exception:
            self._warn.warn("topology", "rlsight topology report failed; topology may be stale")

    def data_buffer(self, length, ts=None):
        try:
            if length is not None:
                self._put("data_buffer", (time.time() if ts is None else float(ts), int(length)))
        except Exception:
            self._warn.warn("data_buffer", "rlsight data-buffer report failed")

    def gpu_samples(self, samples):
        """GPU readings: (ts, node, gpu, util, mem_mb, power_w) tuples (the GPU sampler sends these)."""
        for s in samples:
            self._put("gpu_util", tuple(s))

    def gpu_processes(self, samples):
        """Per-process VRAM: (ts, node, gpu, pid, name, mem_mb) tuples."""
        for s in samples:
            self._put("gpu_processes", tuple(s))

    def samples(self, rollout_id, samples, evaluation=False):
        """One rollout step's samples, in batch order; the collector writes them as ``samples/rollout_{id}.parquet``
        (``eval_{id}`` with ``evaluation=True``) once all have arrived. Each sample is a dict (fields: index,
        group_index, prompt (text or chat messages), response, tokens, response_length, reward (or a dict with
        reward_key), status, loss_mask, rollout_log_probs, weight_versions, timing, metadata, label and, from the
        train side, log_probs, ref_log_probs, entropy, advantages; anything else is kept too) or an object with
        ``to_dict()`` such as slime's Sample. Recording a step again replaces it; record a step's samples from one
        process (two calls recording one step at once: the one completed last is the step). The samples are encoded in the
        calling thread (they may change afterwards), once per step."""
        try:
            encoded = []
            for i, sample in enumerate(samples):
                # one sample that cannot be encoded is left out of its step (and counted), not the whole step
                try:
                    fields = _sample_fields(sample)
                    if not isinstance(fields, dict):
                        raise TypeError("to_dict() gave a %s, not a dict" % type(fields).__name__)
                    text = _dumps(fields, default=_plain)
                except Exception as err:
                    self.rejected += 1
                    self._warn.warn("sample %r" % (rollout_id,), "rlsight left sample %d of rollout %r out of its step: %s",
                                    i, rollout_id, err)
                    continue
                size = _utf8_len(text)
                if size > SAMPLE_MAX_BYTES:
                    self.rejected += 1
                    self._warn.warn("sample too large", "rlsight left sample %d of rollout %r out of its step: %d bytes encoded, "
                                    "more than a batch to the collector may hold (%d)", i, rollout_id, size, SAMPLE_MAX_BYTES)
                    continue
                encoded.append(text)
            if not encoded:
                return
            self._calls += 1
            call = "%s-%d" % (self._producer, self._calls)
            head = _dumps({"rollout_id": int(rollout_id), "evaluation": bool(evaluation), "call": call, "count": len(encoded)})
            for i, text in enumerate(encoded):
                self._put(SAMPLES_STREAM, '%s,"position":%d,"sample":%s}' % (head[:-1], i, text))
        except Exception:
            self._warn.warn("samples", "rlsight could not record the samples of rollout %r; dropping them", rollout_id)

    def set_router(self, addr):
        """Tells the collector where the SGLang router is (router scrape mode)."""
        threading.Thread(target=self._post_router, args=(addr,), daemon=True).start()

    # ------------------------------------------------------------------ sending

    _FIELDS = {
        "metrics": ("ts", "step_key", "step", "metrics"),
        "phases": ("name", "t0", "t1", "node", "gpus", "rank", "role"),
        "topology": ("ts", "engines"),
        "data_buffer": ("ts", "length"),
        "gpu_util": ("ts", "node", "gpu", "util", "mem_mb", "power_w"),
        "trajectories": ("ts", "kind", "sample_index", "group_index", "turn", "weight_version", "detail"),
        "gpu_processes": ("ts", "node", "gpu", "pid", "name", "mem_mb"),
    }

    def _encode(self, stream, record):
        if stream == SAMPLES_STREAM:
            return record  # encoded by samples() in the caller's thread
        fields = self._FIELDS[stream]
        d = dict(zip(fields, record))
        for k in ("ts", "t0", "t1"):
            if k in d:
                d[k] = float(d[k])
        return _dumps(d)

    def _post(self, path, body, content_type, headers=None):
        if self.address is None:
            self._rediscover()
            if self.address is None:
                raise ConnectionError("no collector yet (%s not found)" % os.path.join(self._dashboard_dir or "", COLLECTOR_FILE))
        all_headers = {"Content-Type": content_type, "Authorization": "Bearer " + self.token}
        all_headers.update(headers or {})
        req = urllib.request.Request(self.address + path, data=body, method="POST", headers=all_headers)
        with urllib.request.urlopen(req, timeout=self._timeout) as res:
            return res.read()

    def _post_router(self, addr):
        try:
            self._post("/v1/router", _dumps({"addr": addr}).encode(), "application/json")
        except Exception as err:
            self._warn.warn("router", "rlsight router registration failed (%s); engine metrics may be missing", err)

    def _rediscover(self):
        """After a collector restart its address and token change: read collector.json again."""
        if self._dashboard_dir is None:
            return
        try:
            info = _read_collector_file(self._dashboard_dir)
            self.address, self.token = info["address"].rstrip("/"), info["token"]
        except Exception:
            pass

    def _send(self, stream, lines, seq):
        """True when the batch is done with (acknowledged, or refused as bad); False to retry later."""
        body = ("\n".join(lines) + "\n").encode("utf-8")
        try:
            answer = self._post("/v1/streams/" + stream, body, "application/x-ndjson",
                                {BATCH_HEADER: "%s/%d" % (self._producer, seq)})
            rejected = 0
            try:
                doc = json.loads(answer or b"{}")
                rejected = int(doc.get("rejected", 0)) if not doc.get("duplicate") else 0
                if rejected:
                    self._warn.warn("rejected lines " + stream, "rlsight collector left out %d bad %s line(s): %s",
                                    rejected, stream, "; ".join(doc.get("problems", []))[:300])
            except (ValueError, AttributeError, TypeError):
                pass
            self.rejected += rejected
            self.sent += len(lines) - rejected
            return True
        except urllib.error.HTTPError as err:
            if err.code in (400, 404, 409, 413, 415):
                self.rejected += len(lines)
                detail = err.read()[:300].decode("utf-8", "replace")
                self._warn.warn("rejected " + stream, "rlsight collector refused a %s batch (%d): %s", stream, err.code, detail)
                return True
            if err.code == 401:
                self._rediscover()
            self.send_failures += 1
            if err.code == 401:
                self._warn.warn("token", "rlsight collector refused the token%s; records kept for a retry",
                                "" if self._dashboard_dir else " (give the one in dashboard/collector.json)")
            else:
                self._warn.warn("http", "rlsight collector answered %d; records kept for a retry", err.code)
            return False
        except Exception as err:
            self.send_failures += 1
            tried = self.address
            self._rediscover()
            # no collector yet: connect() said so already; else name the address that failed, not one found since
            if tried is not None:
                self._warn.warn("down", "rlsight collector at %s unreachable (%s); records kept for a retry", tried, err)
            return False

    def _held(self):
        return len(self._queue) + sum(len(b[1]) for b in self._pending)

    def _drain_once(self):
        batches = collections.OrderedDict()
        q = self._queue
        while True:
            try:
                stream, record = q.popleft()
            except IndexError:
                break
            try:
                line = self._encode(stream, record)
            except Exception:
                self.rejected += 1
                self._warn.warn("encode", "rlsight could not encode a %s record; dropping it", stream)
                continue
            size = _utf8_len(line)
            if size > RECORD_MAX_BYTES:
                # the collector would refuse its whole batch unread: this record alone is left out
                self.rejected += 1
                self._warn.warn("too large " + stream, "rlsight left out a %s record of %d bytes, more than a batch to the collector may hold (%d)",
                                stream, size, RECORD_MAX_BYTES)
                continue
            batches.setdefault(stream, []).append(line)
        for stream, lines in batches.items():
            for chunk in _chunks(lines, BATCH_BYTES):
                self._seq += 1
                self._pending.append([stream, chunk, self._seq, None])
        # the pending list is bounded like the queue (the oldest go first), and so is a batch's time of retrying
        now = time.monotonic()
        over = sum(len(b[1]) for b in self._pending) - self._queue_size
        while self._pending and (over > 0 or (self._pending[0][3] is not None and now - self._pending[0][3] > self._retry_seconds)):
            stream, lines = self._pending[0][0], self._pending[0][1]
            if over <= 0:
                self._warn.warn("gave up " + stream, "rlsight dropped a %s batch the collector did not acknowledge within %gs",
                                stream, self._retry_seconds)
            cut = len(lines) if over <= 0 else min(over, len(lines))
            self.dropped += cut
            over -= cut
            if cut == len(lines):
                self._pending.pop(0)
            else:
                self._pending[0][1] = lines[cut:]
        keep = []
        failed = False
        for batch in self._pending:
            if batch[3] is None:
                batch[3] = now
            if failed or not self._send(batch[0], batch[1], batch[2]):
                failed = True
                keep.append(batch)
        self._pending = keep
        return not failed

    def _run(self):
        backoff = self._batch_seconds
        while True:
            self._wake.wait(backoff)
            self._wake.clear()
            self._idle.clear()
            ok = True
            try:
                ok = self._drain_once()
            except Exception:
                self._warn.warn("sender", "rlsight sender failed; will retry")
                ok = False
            if not self._queue and not self._pending:
                self._idle.set()
            self._failing = not ok
            backoff = self._batch_seconds if ok else min(10.0, max(0.5, backoff * 2))
            if self._closed:  # close() already gave the final flush its time
                self._idle.set()
                return

    def flush(self, timeout=5.0):
        """Sends what is queued now; True when everything queued was acknowledged within ``timeout`` (a record
        dropped or refused meanwhile makes it False: see ``stats()``)."""
        deadline = time.monotonic() + timeout
        lost = self.dropped + self.rejected
        self._idle.clear()
        self._wake.set()
        while time.monotonic() < deadline:
            if self._idle.wait(min(0.05, max(0.0, deadline - time.monotonic()))) and not self._queue and not self._pending:
                return self.dropped + self.rejected == lost
            # records queued meanwhile are sent at once; but a collector that refuses or is down is retried at the
            # sender's back-off (many ranks closing at once would each send 20 requests a second)
            if not self._failing:
                self._wake.set()
        return not self._queue and not self._pending and self.dropped + self.rejected == lost

    def add_close_hook(self, fn):
        """``fn(seconds)`` is called by ``close()`` first, given half of what is left of its timeout (it should return by
        then): the other half is the trainer's own last records'."""
        self._close_hooks.append(fn)

    def close(self, timeout=5.0):
        """Runs the close hooks, flushes and stops the sender, all within ``timeout`` seconds. Returns whether everything went."""
        deadline = time.monotonic() + timeout
        for fn in self._close_hooks:
            try:
                # a hook that takes all it is given (a GPU sampler that never answers stop) leaves the flush its half
                fn(max(0.0, deadline - time.monotonic()) / 2)
            except Exception:
                logger.exception("rlsight close hook failed")
        self._close_hooks = []
        ok = self.flush(max(0.0, deadline - time.monotonic()))
        self._closed = True
        self._wake.set()
        try:
            atexit.unregister(self._at_exit)
        except Exception:
            pass
        return ok

    def _at_exit(self):
        # at interpreter exit a dead collector may delay the exit by this much (RLSIGHT_CLOSE_TIMEOUT), never more
        if self._closed:
            return
        try:
            timeout = float(os.environ.get("RLSIGHT_CLOSE_TIMEOUT", "2"))
        except ValueError:
            timeout = 2.0
        if not self.close(timeout=timeout):
            logger.warning("rlsight: %d record(s) not sent before exit (%s)", self._held(), self.stats())

    def stats(self):
        return {"queued": self.queued, "sent": self.sent, "dropped": self.dropped, "rejected": self.rejected,
                "send_failures": self.send_failures, "held": self._held()}


def _chunks(lines, max_bytes):
    """Batches of at most 1,000 lines and, with ``max_bytes``, about that many bytes (a longer line goes alone)."""
    out, size = [], 0
    for line in lines:
        n = _utf8_len(line)
        if out and (len(out) >= 1000 or (max_bytes is not None and size + n > max_bytes)):
            yield out
            out, size = [], 0
        out.append(line)
        size += n + 1
    if out:
        yield out


def _read_collector_file(dashboard_dir):
    with open(os.path.join(dashboard_dir, COLLECTOR_FILE), "r", encoding="utf-8") as f:
        info = json.load(f)
    if not isinstance(info.get("address"), str) or not isinstance(info.get("token"), str):
        raise ValueError("%s is not a collector file" % os.path.join(dashboard_dir, COLLECTOR_FILE))
    return info


def connect(dump_details=None, *, collector=None, token=None, **kwargs):
    """A client for the run at ``dump_details`` (default: ``$RLSIGHT_DUMP_DETAILS``; its collector found
    through ``dashboard/collector.json``), or for ``collector=URL`` with ``token``. A collector not started yet
    is waited for in the background: records are queued meanwhile. Keyword arguments override the detected
    identity (node, gpus, rank) and the batching (queue_size, batch_size, batch_seconds, timeout, retry_seconds)."""
    dashboard_dir = None
    if collector is None:
        if dump_details is None:
            dump_details = os.environ.get("RLSIGHT_DUMP_DETAILS")
        if dump_details is None:
            raise ValueError("rlsight.connect needs dump_details=DIR or collector=URL")
        dashboard_dir = os.path.join(dump_details, "dashboard")
        try:
            info = _read_collector_file(dashboard_dir)
            collector, token = info["address"], token or info["token"]
        except (OSError, ValueError):
            logger.warning("rlsight: no collector at %s yet; records are queued until it starts",
                           os.path.join(dashboard_dir, COLLECTOR_FILE))
            return Client(None, "", dashboard_dir=dashboard_dir, **kwargs)
    if not token:
        raise ValueError("rlsight.connect(collector=...) needs token=... (from dashboard/collector.json)")
    if not str(collector).startswith(("http://", "https://")):
        raise ValueError("rlsight.connect: collector=%r is not an http:// or https:// URL" % (collector,))
    return Client(collector, token, dashboard_dir=dashboard_dir, **kwargs)
