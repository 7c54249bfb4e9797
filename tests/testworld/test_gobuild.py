"""The Go build cache's promises, with recipes that stand in for `go`: a warm cache is found
without a toolchain, an interrupted or failed build leaves no half cache, a changed row
is rebuilt, concurrent callers build once, and a missing toolchain is one clear line."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from testworld import cli, gobuild
from testworld.gobuild import Build, BuildError, GoMissing


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TRAINFORGE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def script_recipe(calls: list[str], *, fail_after_first: bool = False):
    """A recipe that writes an executable `tool` (as `go build -o` would)."""

    def recipe(entry: Build, work: Path, out: Path, env: dict[str, str]) -> None:
        calls.append(entry.version)
        out.mkdir(parents=True)
        (out / "tool").write_text("#!/bin/sh\necho tool " + entry.version + "\n")
        (out / "tool").chmod(0o755)
        gobuild.build_log(work).open("a").write("built tool\n")
        if fail_after_first:
            raise BuildError(f"build {entry.name}: go build exited 1; see {gobuild.build_log(work)}")

    return recipe


def row(version: str, recipe) -> Build:
    return Build("tool", "example.com/tool", version, ("example.com/tool/cmd/tool",), custom=recipe)


def test_a_build_lands_whole_and_a_warm_cache_is_found_without_go(cache, monkeypatch):
    calls: list[str] = []
    entry = row("v1.0.0", script_recipe(calls))
    assert gobuild.find(entry) is None
    where = gobuild.build(entry)
    assert where == cache / "tool" / "v1.0.0"
    assert (where / ".complete").read_text() == entry.stamp
    assert "build_seconds=" in (where / "BUILD_INFO").read_text()
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(gobuild, "GO_FALLBACK", Path("/nonexistent"))
    assert gobuild.find(entry) == where
    assert gobuild.binary(entry) == where / "tool"
    assert calls == ["v1.0.0"]
    assert not list((cache / "tool").glob(".build.*"))


def test_a_failed_build_leaves_no_cache_and_keeps_its_log(cache):
    entry = row("v1.0.0", script_recipe([], fail_after_first=True))
    with pytest.raises(BuildError, match="go build exited 1"):
        gobuild.build(entry)
    assert not (cache / "tool" / "v1.0.0").exists()
    assert not list((cache / "tool").glob(".build.*"))
    assert "built tool" in (cache / "tool" / "build.log").read_text()


def test_a_binary_that_does_not_run_is_not_cached(cache):
    def broken(entry: Build, work: Path, out: Path, env: dict[str, str]) -> None:
        out.mkdir(parents=True)
        (out / "tool").write_text("#!/bin/sh\nexit 2\n")
        (out / "tool").chmod(0o755)

    with pytest.raises(BuildError, match=r"tool --version exited 2"):
        gobuild.build(row("v1.0.0", broken))
    assert not (cache / "tool" / "v1.0.0").exists()


def test_a_stale_or_partial_cache_is_rebuilt_as_a_whole(cache):
    calls: list[str] = []
    entry = row("v1.0.0", script_recipe(calls))
    where = gobuild.build(entry)
    (where / ".complete").write_text("an older row")
    (where / "leftover").write_text("x")
    assert gobuild.find(entry) is None
    assert gobuild.build(entry) == where
    assert calls == ["v1.0.0", "v1.0.0"] and not (where / "leftover").exists()


def test_concurrent_callers_build_once(cache):
    calls: list[str] = []
    gate = threading.Event()

    def slow(entry: Build, work: Path, out: Path, env: dict[str, str]) -> None:
        gate.wait(5)
        script_recipe(calls)(entry, work, out, env)

    entry = row("v1.0.0", slow)
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(gobuild.build(entry))) for _ in range(3)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(30)
    assert calls == ["v1.0.0"] and len(set(results)) == 1 and len(results) == 3


def test_without_go_a_cold_build_is_one_clear_line(cache, monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(gobuild, "GO_FALLBACK", Path("/nonexistent"))
    with pytest.raises(GoMissing, match=r"^no 'go' toolchain on PATH \(or /nonexistent\): install Go"):
        gobuild.build(Build("tool", "example.com/tool", "v1.0.0", ("example.com/tool",)))
    assert cli.main(["build", "kwok"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("kwok v0.8.0: no 'go' toolchain on PATH"), err


def test_the_cli_refuses_an_unknown_part(capsys):
    assert cli.main(["build", "kubelet"]) == 1
    assert "unknown part 'kubelet'; known: " in capsys.readouterr().err


def test_the_wrapper_copies_only_replace_lines_that_point_at_modules():
    gomod = """module example.com/ctrl

go 1.24

replace github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-pre

replace (
\tgithub.com/example/api => ./api
\tgolang.org/x/net v0.1.0 => golang.org/x/net v0.2.0 // pinned
)
"""
    assert gobuild._replace_lines(gomod) == [
        "github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-pre",
        "golang.org/x/net v0.1.0 => golang.org/x/net v0.2.0",
    ]
