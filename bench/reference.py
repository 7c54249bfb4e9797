"""`train-compile` as it was before the speed work, for a before/after row in one run.

Same CLI, with the two hot paths put back: the ruamel round-trip loader for every file
(instead of libyaml with lazy positions) and PyYAML's representer for every document
(instead of `compiler.emit.fastemit`). Run as `python -m bench.reference build SRC -o OUT`.
"""

from __future__ import annotations

from compiler.emit import serialize
from schemas import loader


def _pyyaml_dump(obj: object) -> str:
    return serialize._pyyaml_dump(serialize.ordered(obj))


def main() -> None:
    loader.load_text = loader.load_text_ruamel  # type: ignore[assignment]
    serialize.dump = _pyyaml_dump  # type: ignore[assignment]
    from compiler.cli.main import main as cli

    cli()


if __name__ == "__main__":
    main()
