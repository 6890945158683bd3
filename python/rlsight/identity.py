"""Who the calling process is: node IP, GPU ids, distributed rank (detected once, overridable)."""

import os
import socket
import sys


def node_ip():
    """``RLSIGHT_NODE_IP``, else Ray's node address when Ray runs here, else the outbound IPv4 address."""
    env = os.environ.get("RLSIGHT_NODE_IP")
    if env:
        return env
    ray = sys.modules.get("ray")
    if ray is not None:
        try:
            if ray.is_initialized():
                return ray.util.get_node_ip_address()
        except Exception:
            pass
    try:
        # connecting a UDP socket sends nothing; it only picks the interface a route would use
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
        finally:
            s.close()
    except Exception:
        return "127.0.0.1"


def visible_gpus():
    """Physical GPU indices from ``CUDA_VISIBLE_DEVICES`` (``[]`` when unset or not numeric)."""
    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not raw:
        return []
    out = []
    for part in raw.split(","):
        part = part.strip()
        if not part.isdigit():
            return []
        out.append(int(part))
    return out


def rank():
    """``torch.distributed.get_rank()`` once initialised, else ``RANK``, else -1."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:
            pass
    raw = os.environ.get("RANK")
    if raw is not None and raw.strip().lstrip("-").isdigit():
        return int(raw)
    return -1
