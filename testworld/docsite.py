"""The documentation site's generator, in an environment of its own: `make docs`, `make docs-build`.

Why it is shaped so: mkdocs and Material for MkDocs never import the project, and their pins
(mkdocs<2, Markdown, Jinja2, Pygments, requests ...) are no business of a user's install, so
they live in a venv of their own, as the Kubeflow SDK does (testworld.pyenvs):
`docs/requirements.txt`, compiled with hashes by `make lock` from `docs/requirements.in`, kept
under `~/.cache/trainforge/venvs/docs-<hash>` and found at once after the first time.
`make test` builds the site in strict mode (tests/docs/test_site.py), so a broken link, an
anchor no heading makes or a page missing from the nav fails it, as `make docs-build` does.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import pyenvs

REQUIREMENTS = pyenvs.REPO / "docs" / "requirements.txt"
ADDRESS = "127.0.0.1:8000"


def _env() -> dict[str, str]:
    # Material's end-of-life notice (docs/development.md, The documentation site, says it) on
    # every build would bury the warnings that matter
    return dict(pyenvs.uv_env(), NO_MKDOCS_2_WARNING="1")


def mkdocs() -> Path:
    """The docs venv's `mkdocs`, the venv built on first use."""
    return pyenvs.venv("docs", REQUIREMENTS.read_text()) / "bin" / "mkdocs"


def build(site_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of mkdocs.yml (into `site_dir`, else the config's `site/`); output captured."""
    where = ["--site-dir", str(site_dir)] if site_dir else []
    return subprocess.run([str(mkdocs()), "build", "--strict", "--clean", *where], cwd=pyenvs.REPO,
                          capture_output=True, text=True, env=_env())


def run(action: str) -> int:
    """`serve` (on ADDRESS, reloading as pages change; a warning is printed, not fatal, so a page
    being edited still shows) or `build` (strict, into site/); the exit code."""
    if action == "build":
        proc = build()
        print(proc.stdout + proc.stderr, end="", flush=True)
        return proc.returncode
    serve = [str(mkdocs()), "serve", "--no-strict", "--dev-addr", ADDRESS]
    try:
        return subprocess.call(serve, cwd=pyenvs.REPO, env=_env())
    except KeyboardInterrupt:  # Ctrl-C reached mkdocs too, which has stopped
        return 0
