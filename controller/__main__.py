"""`train-controller` / `python -m controller`: run the slim controller until SIGTERM.

Flags mirror the upstream operator's where they exist (semantics §10) so manifests
translate one to one; `--frameworks` replaces `--enable-scheme`.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType

import click

from controller import kinds as kind_table
from controller.desired import Options
from controller.kube import Client
from controller.manager import Manager


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--kubeconfig", envvar="KUBECONFIG", default=None, help="Path to a kubeconfig (default: in-cluster, then ~/.kube/config).")
@click.option("--context", default=None, help="kubeconfig context to use.")
@click.option("--frameworks", "--enable-scheme", "frameworks", default="",
              help="Comma list of frameworks/kinds to manage (pytorch,tensorflow,mpi,xgboost,paddle,jax,mxnet); default all.")
@click.option("--namespace", envvar="KUBEFLOW_NAMESPACE", default=None, help="Watch one namespace only (default: all).")
@click.option("--workers", default=4, show_default=True, help="Concurrent reconciles.")
@click.option("--watch-timeout", default=300, show_default=True, help="Server-side watch timeout in seconds (randomized up to 2x).")
@click.option("--pytorch-init-container-image", default="alpine:3.10", show_default=True)
@click.option("--pytorch-init-container-max-tries", default=100, show_default=True)
@click.option("--mpi-kubectl-delivery-image", default="ghcr.io/kubeflow/training-v1/kubectl-delivery:latest", show_default=True)
@click.option("--log-level", default=lambda: os.environ.get("LOG_LEVEL", "INFO"), show_default="INFO")
def main(kubeconfig: str | None, context: str | None, frameworks: str, namespace: str | None, workers: int,
         watch_timeout: int, pytorch_init_container_image: str, pytorch_init_container_max_tries: int,
         mpi_kubectl_delivery_image: str, log_level: str) -> None:
    """Reconcile kubeflow.org/v1 training jobs into pods and services, like the Training Operator."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        enabled = kind_table.select(frameworks)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--frameworks") from exc
    client = Client.connect(kubeconfig, context=context, pool_size=workers + len(enabled) + 8)
    options = Options(
        pytorch_init_image=pytorch_init_container_image,
        pytorch_init_max_tries=pytorch_init_container_max_tries,
        mpi_kubectl_delivery_image=mpi_kubectl_delivery_image,
    )
    manager = Manager(client, enabled, namespace=namespace, workers=workers, options=options, watch_timeout=watch_timeout)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    manager.start()
    try:
        stop.wait()
    finally:
        manager.stop()
        client.close()


if __name__ == "__main__":
    main()
