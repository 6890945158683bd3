"""slime with flags only: record a slime run live, without changing slime.

    export RLSIGHT_DUMP_DETAILS=/runs/exp1          # the directory `rlsight collect --dump-details` writes
    python train.py ... \\
      --custom-rollout-log-function-path rlsight.integrations.slime.log_rollout_data \\
      --custom-eval-rollout-log-function-path rlsight.integrations.slime.log_eval_rollout_data

Each hook sends the step's metrics exactly as slime's default logging computes them (``rollout/*``,
``perf/*`` with the real ``rollout_time`` (none while slime replays ``--load-debug-rollout-data``), the extra
metrics; ``eval/*`` for evaluations) and every sample
(``Sample.to_dict()``, its trace included), then returns False so slime's own logging still runs. Neither
ever raises into training: without a collector they warn once and do nothing. What they sent is flushed
at interpreter exit (at most ``RLSIGHT_CLOSE_TIMEOUT`` seconds, default 30).
"""

import atexit
import logging
import math
import os
import threading
import zlib

from .. import client as _client_module

logger = logging.getLogger("rlsight.slime")

_lock = threading.Lock()
_client = None
_gave_up = False
_said = set()  # the kinds of warning given already


def client():
    """The integration's client (created on first use from ``RLSIGHT_DUMP_DETAILS``), or None without one."""
    global _client, _gave_up
    if _client is not None or _gave_up:
        return _client
    with _lock:
        if _client is not None or _gave_up:
            return _client
        run_dir = os.environ.get("RLSIGHT_DUMP_DETAILS")
        if not run_dir:
            _gave_up = True
            logger.warning("rlsight: RLSIGHT_DUMP_DETAILS is not set; this slime run is not recorded by rlsight")
            return None
        try:
            _client = _client_module.connect(dump_details=run_dir, register_atexit=False)
        except Exception as err:  # never into training
            _gave_up = True
            logger.warning("rlsight: could not connect to the collector of %s (%s); this run is not recorded", run_dir, err)
            return None
        atexit.register(_close_at_exit)
        return _client


def _close_at_exit():
    c = _client
    if c is not None:
        try:
            timeout = float(os.environ.get("RLSIGHT_CLOSE_TIMEOUT", "30"))
        except ValueError:
            timeout = 30.0
        if c.address is None:
            timeout = min(timeout, 1.0)  # no collector ever appeared: the exit is not held up for one
        c.close(timeout=timeout)


# Every parameter has a default and more are taken: a call shape this module does not expect (another slime
# version) is warned about and ignored instead of raising a TypeError into training.
def log_rollout_data(rollout_id=None, args=None, samples=None, rollout_extra_metrics=None, rollout_time=None, *more, **named):
    """``--custom-rollout-log-function-path``: the train step's metrics and samples. Returns False (slime logs too)."""
    try:
        _expect_call_shape("log_rollout_data", rollout_id, more, named)
        c = client()
        if c is None:
            return False
        samples = list(samples)
        metrics, perf = _slime_metric_functions()
        log_dict = dict(rollout_extra_metrics or {})
        log_dict.update(_prefix(metrics(args, samples), "rollout/"))
        if getattr(args, "load_debug_rollout_data", None):
            # a replay of dumped rollouts: slime logs no metrics then, and rollout_time is the time taken to load the
            # dump (throughputs far above any real run's); the samples and their rollout/ metrics are those of the dump
            _say_once("replay", "rlsight: slime replays --load-debug-rollout-data: perf/ metrics are not recorded (its "
                      "rollout_time is the time taken to load the dump); rollout/ metrics and samples are")
        else:
            log_dict.update(_prefix(perf(args, samples, rollout_time), "perf/"))
        step = _rollout_step(args, rollout_id)
        log_dict["rollout/step"] = step
        c.samples(rollout_id, samples)
        c.log(log_dict, step=step, step_key="rollout/step")
    except Exception:
        logger.warning("rlsight: recording rollout %r failed; training goes on", rollout_id, exc_info=True)
    return False


def log_eval_rollout_data(rollout_id=None, args=None, data=None, extra_metrics=None, *more, **named):
    """``--custom-eval-rollout-log-function-path``: the evaluation's metrics and samples. Returns False."""
    try:
        _expect_call_shape("log_eval_rollout_data", rollout_id, more, named)
        c = client()
        if c is None:
            return False
        metrics, _ = _slime_metric_functions()
        log_dict = dict(extra_metrics or {})
        for key in data.keys():
            rewards = data[key]["rewards"]
            log_dict["eval/%s" % key] = sum(rewards) / len(rewards)
            if (samples := data[key].get("samples")) is not None:
                log_dict.update(_prefix(metrics(args, samples), "eval/%s/" % key))
            if "truncated" in data[key]:
                truncated = data[key]["truncated"]
                log_dict["eval/%s-truncated_ratio" % key] = sum(truncated) / len(truncated)
            if getattr(args, "log_passrate", False):
                log_dict.update(_prefix(_pass_rate(rewards, args.n_samples_per_eval_prompt), "eval/%s-" % key))
        step = _rollout_step(args, rollout_id)
        log_dict["eval/step"] = step
        samples = [s for info in data.values() for s in (info.get("samples") or [])]
        c.samples(rollout_id, samples, evaluation=True)
        c.log(log_dict, step=step, step_key="eval/step")
    except Exception:
        logger.warning("rlsight: recording eval %r failed; training goes on", rollout_id, exc_info=True)
    return False


def _say_once(key, message):
    if key not in _said:
        _said.add(key)
        logger.warning(message)


def _expect_call_shape(name, rollout_id, more, named):
    if rollout_id is None or more or named:
        raise TypeError("%s called as slime never calls it (rollout_id=%r, %d more arguments, keywords %s)"
                        % (name, rollout_id, len(more), sorted(named)))


# ------------------------------------------------------------------------------------ slime's metrics


def _slime_metric_functions():
    """slime's own functions when this slime has them (exact by construction), else the same computation below."""
    try:
        from slime.observability import rollout_metrics as own
        return own.compute_metrics_from_samples, own.compute_perf_metrics_from_samples
    except Exception:
        return compute_metrics_from_samples, compute_perf_metrics_from_samples


def _rollout_step(args, rollout_id):
    if getattr(args, "wandb_always_use_train_step", False):
        return rollout_id * args.rollout_batch_size * args.n_samples_per_prompt // args.global_batch_size
    return rollout_id


def _prefix(d, prefix):
    return {prefix + k: v for k, v in d.items()}


def _field(sample, name, default=None):
    if isinstance(sample, dict):
        return sample.get(name, default)
    return getattr(sample, name, default)


def _as_list(v):
    return v.tolist() if hasattr(v, "tolist") else list(v)


def _statistics(values):
    """numpy's mean, median, max and min of a list, as ``compute_statistics`` returns them."""
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    median = float(ordered[mid]) if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0
    return {"mean": float(sum(values)) / n, "median": float(median), "max": max(values), "min": min(values)}


def _group_by(items, key):
    out = {}
    for item in items:
        out.setdefault(key(item), []).append(item)
    return out


def _status(sample):
    s = _field(sample, "status")
    return getattr(s, "value", s)


def _effective_response_length(sample):
    mask = _field(sample, "loss_mask")
    return sum(mask) if mask is not None else _field(sample, "response_length")


def _reward_value(sample, args):
    reward = _field(sample, "reward")
    key = getattr(args, "reward_key", None)
    return reward if not key else reward[key]


def _info(sample, name, attr):
    info = _field(sample, name)
    return info.get(attr, 0) if isinstance(info, dict) else getattr(info, attr, 0)


def _has_repetition(text):
    if len(text) > 10000:
        raw = text[-10000:].encode("utf-8")
        return len(raw) / len(zlib.compress(raw, 9)) > 10
    return False


def compute_metrics_from_samples(args, samples):
    """slime's ``compute_metrics_from_samples`` (slime/observability/rollout_metrics.py)."""
    samples = list(samples)
    log_dict = _prefix(_statistics([_effective_response_length(s) for s in samples]), "response_len/")
    if getattr(args, "advantage_estimator", None) != "ppo":
        def zero_std(group):
            rewards = [_reward_value(s, args) for s in group]
            return len(rewards) == 0 or all(rewards[0] == r for r in rewards)
        groups = [g for g in _group_by(samples, lambda s: _field(s, "group_index")).values() if zero_std(g)]
        names = [str(round(_reward_value(g[0], args), 1)) for g in groups]
        log_dict.update({"zero_std/count_%s" % name: len(items) for name, items in _group_by(names, lambda x: x).items()})
    if getattr(args, "sglang_speculative_algorithm", None) is not None:
        def rate(s):
            draft = _info(s, "spec_info", "spec_draft_token_num")
            return _info(s, "spec_info", "spec_accept_token_num") / draft if draft > 0 else 0.0
        def length(s):
            verify = _info(s, "spec_info", "spec_verify_ct")
            return _info(s, "spec_info", "completion_token_num") / verify if verify > 0 else 0.0
        log_dict["spec_accept_rate"] = sum(rate(s) for s in samples) / len(samples)
        log_dict["spec_accept_length"] = sum(length(s) for s in samples) / len(samples)
    cached = sum(_info(s, "prefix_cache_info", "cached_tokens") for s in samples)
    prompt = sum(_info(s, "prefix_cache_info", "total_prompt_tokens") for s in samples)
    log_dict["prefix_cache_hit_rate"] = cached / prompt if prompt > 0 else 0.0
    log_dict["avg_cached_tokens_per_sample"] = cached / len(samples)
    category = getattr(args, "log_reward_category", None)
    if category is not None:
        by = _group_by(samples, lambda s: _field(s, "reward")[category])
        log_dict.update({"error_cat/%s" % cat: len(items) / len(samples) for cat, items in by.items()})
    log_dict.update(_top_p_kept_vocab(samples))
    log_dict["repetition_frac"] = sum(int(_has_repetition(_field(s, "response") or "")) for s in samples) / len(samples)
    log_dict["truncated_ratio"] = sum(int(_status(s) == "truncated") for s in samples) / len(samples)
    return log_dict


def _top_p_kept_vocab(samples):
    kept = tokens = 0
    for s in samples:
        offsets = _field(s, "rollout_top_p_token_offsets")
        length = _field(s, "response_length")
        if offsets is None or length == 0:
            continue
        offsets = [int(x) for x in _as_list(offsets)]
        if not offsets:
            continue
        if len(offsets) != length + 1:
            return {}  # slime asserts here; the metric is left out rather than the step
        if _field(s, "remove_sample"):
            continue
        mask = _field(s, "loss_mask")
        if mask is None:
            kept += offsets[-1] - offsets[0]
            tokens += length
            continue
        mask = _as_list(mask)
        kept += sum(offsets[i + 1] - offsets[i] for i in range(length) if mask[i])
        tokens += sum(1 for m in mask if m)
    return {"top_p_kept_vocab_per_token": kept / tokens} if tokens else {}


_REQUEST_FIELDS = (
    ("request/e2e_latency", "e2e_latency"),
    ("request/queue_time", "queue_time"),
    ("decode/throughput", "decode_throughput"),
    ("prefill/bootstrap_queue_duration", "pd_prefill_bootstrap_queue_duration"),
    ("prefill/bootstrap_duration", "pd_prefill_bootstrap_duration"),
    ("prefill/alloc_wait_duration", "pd_prefill_alloc_wait_duration"),
    ("prefill/forward_duration", "pd_prefill_forward_duration"),
    ("prefill/transfer_queue_duration", "pd_prefill_transfer_queue_duration"),
    ("prefill/transfer_speed_gb_s", "pd_transfer_speed_gb_s"),
    ("prefill/transfer_total_mb", "pd_transfer_total_mb"),
    ("prefill/retry_count", "pd_prefill_retry_count"),
    ("decode/prealloc_duration", "pd_decode_prealloc_duration"),
    ("decode/bootstrap_duration", "pd_decode_bootstrap_duration"),
    ("decode/alloc_wait_duration", "pd_decode_alloc_wait_duration"),
    ("decode/transfer_duration", "pd_decode_transfer_duration"),
    ("decode/forward_duration", "pd_decode_forward_duration"),
)


def _request_perf(samples):
    values = {}
    for s in samples:
        trace = _field(s, "trace")
        if not isinstance(trace, dict):
            continue
        for event in trace.get("events") or []:
            if event.get("type") != "span_end" or event.get("name") != "sglang_generate":
                continue
            attrs = event.get("attrs")
            if not isinstance(attrs, dict):
                continue
            for metric, source in _REQUEST_FIELDS:
                v = attrs.get(source)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    values.setdefault(metric, []).append(float(v))
    out = {}
    for metric, vs in values.items():
        out.update(_prefix(_statistics(vs), metric + "/"))
    return out


def compute_perf_metrics_from_samples(args, samples, rollout_time):
    """slime's ``compute_perf_metrics_from_samples`` (slime/observability/rollout_metrics.py)."""
    samples = list(samples)
    non_generation = [_field(s, "non_generation_time") for s in samples]
    log_dict = {"rollout_time": rollout_time}
    if max(non_generation) > 0:
        log_dict.update(_prefix(_statistics(non_generation), "non_generation_time/"))

    def token_perf(lengths, key):
        longest = max(lengths)
        if getattr(args, "rollout_num_gpus", None):
            log_dict["%stokens_per_gpu_per_sec" % key] = sum(lengths) / rollout_time / args.rollout_num_gpus
        log_dict["longest_%ssample_tokens_per_sec" % key] = longest / rollout_time
        if max(non_generation) == 0:
            return
        times = [t for t, n in zip(non_generation, lengths) if n == longest]
        mean = sum(times) / len(times)
        log_dict["longest_%ssample_non_generation_time" % key] = mean
        log_dict["longest_%ssample_tokens_per_sec_without_non_generation" % key] = longest / (rollout_time - mean)

    token_perf([_field(s, "response_length") for s in samples], "")
    token_perf([_effective_response_length(s) for s in samples], "effective_")
    log_dict.update(_request_perf(samples))
    return log_dict


def _pass_rate(rewards, group_size):
    """slime's ``compute_pass_rate`` (pass@k over groups of ``group_size``)."""
    if group_size == 1:
        return {}
    groups = len(rewards) // group_size
    out = {}
    for k in [2 ** i for i in range(int(math.log2(group_size)) + 1)]:
        estimates = []
        for g in range(groups):
            n, c = group_size, sum(1 for r in rewards[g * group_size:(g + 1) * group_size] if r == 1)
            if n - c < k:
                estimates.append(1.0)
            else:
                p = 1.0
                for x in range(n - c + 1, n + 1):
                    p *= 1.0 - k / x
                estimates.append(1.0 - p)
        out["pass@%d" % k] = sum(estimates) / len(estimates)
    return out
