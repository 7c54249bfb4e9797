"""Every fact about a Kubeflow kind lives in its adapter (`foundation/frameworks/`): a shipped
module elsewhere that names a kind, its plural, its replica-spec field or a replica type in
its code fails here, so a new kind keeps touching its adapter, its snapshots and what is
generated from them, nothing else (docs/architecture.md, "One adapter per kind").
Kubeflow Trainer v2's facts likewise live in `foundation/frameworks/stock_runtimes.py` (and the
adapters that name a runtime) and the trainer-v2 target (`compiler/targets/trainer_v2*.py`):
its API group (so its API version and labels), a stock runtime's name, or a replicated job its
runtimes run (`node`, `launcher`) as a whole string anywhere else fails too.

What is scanned: the string constants of every module of the shipped packages (f-string
parts included; docstrings and comments are prose and left out) outside the adapters, for a
kind name, a plural or a replica-spec field anywhere, a replica type (`Worker`, `PS`, ...)
as a word, or a lowercased one (`worker`, the replica-type label's spelling) as the whole
string or as a `-worker` part of a name. `ALLOWED` lists what stays, each with why; an entry
that no longer matches fails too, so the list cannot outlive its reason."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from foundation.frameworks import ADAPTERS
from foundation.frameworks import stock_runtimes as trainer

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("schemas", "foundation", "compiler", "overlays", "controller")
ADAPTERS_DIR = "foundation/frameworks/"
TRAINER_TARGET = "compiler/targets/trainer_v2"  # trainer_v2.py, trainer_v2_rules.py, trainer_v2_restarts.py

KINDS = {a.facts.kind for a in ADAPTERS.values()}
FIELDS = {a.facts.replica_specs for a in ADAPTERS.values()} | {a.facts.plural for a in ADAPTERS.values()}
TYPES = {t for a in ADAPTERS.values() for t in a.facts.replica_types}
ANYWHERE = re.compile(r"\b(" + "|".join(sorted(KINDS | FIELDS | TYPES)) + r")\b")
LOWER = "|".join(sorted(t.lower() for t in TYPES))
NAME_PART = re.compile(rf"(?:^|}})-({LOWER})\b")  # "-worker-" of f"{job}-worker-{i}", or "{job}-worker"
# Kubeflow Trainer v2's: its API group (in its API version and its labels) and its stock runtimes'
# names anywhere, the replicated jobs its runtimes run as a whole string; at home in its facts
# (foundation/frameworks/stock_runtimes.py, the adapters that name them) and the trainer-v2 target
TRAINER_ANYWHERE = re.compile("(" + "|".join(re.escape(f) for f in (trainer.GROUP, *trainer.STOCK_RUNTIMES)) + ")")
TRAINER_WHOLE = {trainer.NODE, trainer.LAUNCHER}

# (module, what it names) -> why it stays
ALLOWED: dict[tuple[str, str], str] = {
    ("compiler/gitops/argocd.py", "server"): "an Argo CD Application's destination.server, not MXJob's Server",
    ("compiler/cli/live/render.py", "server"): "the API server's address in status' JSON, not MXJob's Server",
}


def _prose(tree: ast.AST) -> set[int]:
    """The ids of string statements: docstrings, and the strings written after an assignment
    to document it."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                    out.add(id(stmt.value))
    return out


def _names(text: str) -> set[str]:
    found = set(ANYWHERE.findall(text)) | set(NAME_PART.findall(text))
    if text.lower() == text and text in {t.lower() for t in TYPES}:
        found.add(text)
    return found


def _trainer_names(text: str) -> set[str]:
    return set(TRAINER_ANYWHERE.findall(text)) | ({text} & TRAINER_WHOLE)


def _hits() -> Iterator[tuple[str, int, str, str]]:
    """(module, line, what it names, the string) for each string constant that names one."""
    for package in SHIPPED:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = path.relative_to(ROOT).as_posix()
            if module.startswith(ADAPTERS_DIR):
                continue
            trainers_own = module.startswith(TRAINER_TARGET)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            prose = _prose(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
                    trainer_v2 = set() if trainers_own else _trainer_names(node.value)
                    for name in _names(node.value) | trainer_v2:
                        yield module, node.lineno, name, node.value


def test_no_shipped_module_outside_their_homes_names_a_kind_a_replica_type_or_a_trainer_v2_fact() -> None:
    hits = list(_hits())
    stray = sorted(f"{module}:{line}: {name} in {text[:80]!r}" for module, line, name, text in hits
                   if (module, name) not in ALLOWED)
    assert not stray, ("a kind's fact outside its adapter (foundation/frameworks/), or Trainer v2's outside"
                       " its facts and target:\n" + "\n".join(stray))
    stale = sorted(set(ALLOWED) - {(module, name) for module, _, name, _ in hits})
    assert not stale, f"allowed but no longer found; remove these entries: {stale}"


def test_the_scan_finds_a_kind_a_replica_type_and_a_pod_name_part() -> None:
    """The patterns catch what they are for (and leave ordinary words and docstrings alone)."""
    assert _names("PyTorchJob {name} is running.") == {"PyTorchJob"}
    assert _names("spec.mpiReplicaSpecs") == {"mpiReplicaSpecs"}
    assert _names("Master") == {"Master"} and _names("launcher") == {"launcher"}
    assert _names("{job}-worker-0") == {"worker"} and _names("-launcher") == {"launcher"}
    assert _names("Worker pods") == {"Worker"}
    assert _names("the workers' scheduler-plugins-scheduler, a server") == set()
    assert _trainer_names("trainer.kubeflow.org/v1alpha1") == {"trainer.kubeflow.org"}
    assert _trainer_names("runtime: torch-distributed") == {"torch-distributed"}
    assert _trainer_names("node") == {"node"} and _trainer_names("a node pool, nodes") == set()
    tree = ast.parse('"""PyTorchJob in a docstring."""\nX = 1\n"""TFJob documenting X."""\n')
    assert len(_prose(tree)) == 2
