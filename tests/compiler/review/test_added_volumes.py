"""A container may mount a volume its operator adds to the pod: the review knows the mpi-operator's."""

from __future__ import annotations

from compiler_builders import job_text, run_cli

PROJECT = "apiVersion: trainforge.dev/v1alpha1\nkind: Project\ndefaults: {target: mpi-operator}\n"
MOUNT = ("roles:\n  launcher:\n    podTemplate:\n      spec:\n        initContainers:\n          - name: wait\n"
         "            image: busybox:1.36\n            volumeMounts: [{name: VOLUME, mountPath: /etc/mpi}]\n")


def _validate(tmp_path, volume: str):
    (tmp_path / "trainforge.yaml").write_text(PROJECT)
    (tmp_path / "job.yaml").write_text(job_text(MOUNT.replace("VOLUME", volume), framework="mpi"))
    return run_cli("validate", tmp_path)


def test_the_mpi_operators_hostfile_volume_may_be_mounted_in_the_launcher(tmp_path):
    run = _validate(tmp_path, "mpi-job-config")

    assert run.exit_code == 0, run.stderr


def test_a_volume_nobody_adds_is_still_refused(tmp_path):
    run = _validate(tmp_path, "mpi-job-confg")

    assert run.exit_code == 1
    assert "mounts volume 'mpi-job-confg', which the pod does not have" in run.stderr
