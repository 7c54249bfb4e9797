"""A training loop that reports how far it has got (docs/progress.md).

Runs anywhere: inside a pod compiled by train-compile (kubeflow-v1 under train-controller, or
trainer-v2 with the Trainer's TrainJobStatus gate on) it reports progress, ETA and metrics to
the job's status; elsewhere `report` does nothing. The "training" is a stand-in (a loss that
falls); replace the loop body with yours. The tests run this very file as the simulated
training process of a pod (tests/e2e/test_progress_kubeflow_v1.py).

    python train.py --steps 1000 --step-seconds 0.5 [--stop-at 62]
"""

from __future__ import annotations

import argparse
import math
import os
import time

from trainforge_progress import flush, report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--step-seconds", type=float, default=0.1)
    parser.add_argument("--stop-at", type=float, default=100.0, help="stop at this percentage (a run cut short)")
    args = parser.parse_args()
    rank = int(os.environ.get("RANK", "0"))  # torchrun's; the master is rank 0
    started = time.monotonic()
    for step in range(1, args.steps + 1):
        time.sleep(args.step_seconds)  # one training step
        loss = 2.0 * math.exp(-step / (args.steps / 3)) + 0.1
        percent = 100.0 * step / args.steps
        elapsed = time.monotonic() - started
        eta = elapsed / step * (args.steps - step)
        if rank == 0:  # one reporter per job is enough; the server keeps the newest anyway
            report(progress=percent, eta=eta, metrics={"loss": loss, "step": step, "epoch": step // 10})
        if percent >= args.stop_at:
            break
    flush()  # the report the client's rate limit held back, if any


if __name__ == "__main__":
    main()
