"""`make schema`'s writer of docs/reference.md (`python -m compiler.cli.reference`).

The page is generated from the spec models (`schemas/reference.py`) plus one table the models
cannot hold: each framework's container, the one a podTemplate container of the same name
patches. That name is a fact of the framework's adapter (`foundation/frameworks/`), and the
schemas layer sits below the compiler, so the page is put together here, at the top.
"""

from __future__ import annotations

from pathlib import Path

from foundation.frameworks import ADAPTERS
from schemas import reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def containers() -> dict[str, str]:
    """Each framework's container name, in the adapter table's order."""
    return {name: adapter.facts.container for name, adapter in ADAPTERS.items()}


def markdown() -> str:
    return reference.markdown(containers())


if __name__ == "__main__":
    print(reference.write(DOC, containers()))
