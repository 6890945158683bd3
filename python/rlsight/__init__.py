"""rlsight producers: send a training run's live telemetry to ``rlsight collect``.

    import rlsight
    client = rlsight.connect(dump_details="/path/to/dump")   # finds the collector via collector.json
    with client.phase("actor_train", role="train"):
        ...
    client.log({"train/loss": 0.12, "train/step": 3}, step=3, step_key="train/step")

Every call is fire and forget: it never blocks the training loop, never raises into it, and counts
what it had to drop.
"""

from .client import Client, connect

__all__ = ["Client", "connect"]
__version__ = "0.1.0"
