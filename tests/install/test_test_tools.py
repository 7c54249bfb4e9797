"""Test-only tools may not hold the project's dependencies back: with the test extras
added, every runtime dependency resolves to the same version as without them (what a user
gets). A tool that pins the world (the Kubeflow SDK pins kubernetes<36) belongs in an
environment of its own, as tests/controller/sdk does; this fails the day one slips into
the extras. Both resolutions run now, against the same index, so a release between two
`make lock`s cannot make it fail."""

from __future__ import annotations

from install_kit import pins_of, uv_run


def test_the_test_extras_hold_no_runtime_dependency_back() -> None:
    alone = pins_of(uv_run("pip", "compile", "pyproject.toml", "--python-version", "3.11", "--no-header", "--quiet"))
    with_tests = pins_of(uv_run("pip", "compile", "pyproject.toml", "--extra", "test", "--python-version", "3.11",
                                "--no-header", "--quiet"))
    assert "kubernetes" in alone and "pydantic" in alone
    held_back = {name: (version, with_tests.get(name)) for name, version in alone.items()
                 if with_tests.get(name) != version}
    assert held_back == {}, "runtime dependency: (as a user gets it, with the test extras)"
