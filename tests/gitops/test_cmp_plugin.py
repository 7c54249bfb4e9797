"""The Config Management Plugin, run as Argo CD's repo server runs it: the exact `generate`
command from the generated `plugin.yaml`, in a fresh clone of a scratch repository, in
the application's path, with the plugin parameter as `ARGOCD_ENV_TRAINFORGE_ENV`."""

from __future__ import annotations

import fnmatch
import os
import shutil
from pathlib import Path

import pytest
import yaml
from gitops_tools import BIN, FIXTURES, kustomize, run, tool

from compiler.gitops import argocd

GIT = ["-c", "user.name=ci", "-c", "user.email=ci@example.com", "-c", "init.defaultBranch=main"]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A clone of a repository holding the TrainJob sources under jobs/ and the build
    output under deploy/, as the repo server would fetch it."""
    origin = tmp_path_factory.mktemp("origin")
    shutil.copytree(FIXTURES / "project", origin / "jobs")
    run(tool("train-compile"), "build", "jobs", "-o", "deploy", cwd=origin)
    run(tool("git"), *GIT, "init", "-q", cwd=origin)
    run(tool("git"), *GIT, "add", ".", cwd=origin)
    run(tool("git"), *GIT, "commit", "-q", "-m", "jobs", cwd=origin)
    clone = tmp_path_factory.mktemp("repo-server") / "checkout"
    run(tool("git"), "clone", "-q", str(origin), str(clone))
    return clone


@pytest.fixture(scope="module")
def plugin(checkout, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("argocd")
    run(tool("train-compile"), "argocd", "jobs", "-o", str(out), "--repo-url", "https://git.example.com/x.git",
        "--path", "jobs", "--source", "plugin", "--cmp-image", "train-compile:test", cwd=checkout)
    configmap = yaml.safe_load((out / "install" / "cmp-plugin.yaml").read_text())
    return yaml.safe_load(configmap["data"]["plugin.yaml"])


def repo_server_env(env: str | None) -> dict[str, str]:
    out = {
        "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "ARGOCD_APP_NAME": f"trainforge-{env}",
        "ARGOCD_APP_NAMESPACE": "argocd",
        "ARGOCD_APP_SOURCE_PATH": "jobs",
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/x.git",
        "ARGOCD_APP_SOURCE_TARGET_REVISION": "HEAD",
        "KUBE_VERSION": "1.32.4",
    }
    if env is not None:
        out[f"ARGOCD_ENV_{argocd.ENV_PARAM}"] = env
    return out


def generate(plugin: dict, app_dir: Path, env: str | None):
    spec = plugin["spec"]["generate"]
    return run(*spec["command"], *spec["args"], cwd=app_dir, env=repo_server_env(env), ok=False)


def test_discover_finds_the_project_file(plugin, checkout):
    pattern = plugin["spec"]["discover"]["fileName"]
    app_dir = checkout / "jobs"
    matches = [p for p in app_dir.rglob("*") if fnmatch.fnmatch("./" + os.path.relpath(p, app_dir), pattern)]
    assert [m.name for m in matches] == ["trainforge.yaml"]


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_generate_prints_exactly_what_render_prints(plugin, checkout, env):
    generated = generate(plugin, checkout / "jobs", env)
    assert generated.returncode == 0, generated.stderr
    rendered = run(tool("train-compile"), "render", str(checkout / "jobs"), "--env", env).stdout
    assert generated.stdout == rendered
    assert generated.stdout.count("kind: ") >= 2


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_the_plugin_and_the_committed_tree_give_argo_cd_the_same_objects(plugin, checkout, env):
    from_plugin = [d for d in yaml.safe_load_all(generate(plugin, checkout / "jobs", env).stdout) if d]
    from_tree = kustomize(checkout / "deploy" / env)

    def key(o):
        return (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])

    assert sorted(from_plugin, key=key) == sorted(from_tree, key=key)


def test_generate_without_the_environment_parameter_fails_loudly(plugin, checkout):
    proc = generate(plugin, checkout / "jobs", None)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "TRAINFORGE_ENV" in proc.stderr


def test_generate_with_an_unknown_environment_fails(plugin, checkout):
    proc = generate(plugin, checkout / "jobs", "staging")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "unknown environment 'staging'" in proc.stderr
