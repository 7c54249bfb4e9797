"""The leaves where two JSON values differ: one walker, each consumer's own way down and its own words.

Three places compare two versions of a job leaf by leaf: the plan (compiler.plan.fields: which
spec fields an edit touched, every leaf of an added subtree), train-controller's Event for a
deferred change (controller.jobs.spec_changes: containers and env matched by name, an added
subtree named once) and `status`' drift (compiler.cli.live.drift: only what git sets, list
items matched by name or manager at the live object's positions). They differ in how they go
down a pair of values and in how they write a path, never in the walk itself, so the walk is
here once and each passes its `Descend`: given the two values at a path, the steps to take
(each step, the old child, the new child), or None to compare the two as one leaf. A step is
whatever the consumer's path syntax needs (a key, an index, a name); paths are tuples of them.
`ABSENT` stands for the side that lacks a key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Optional

Path = tuple[Any, ...]
Descend = Callable[[Any, Any], Optional[Iterable[tuple[Any, Any, Any]]]]


class _Absent:
    def __repr__(self) -> str:
        return "absent"


ABSENT: Any = _Absent()


def leaves(old: Any, new: Any, descend: Descend, path: Path = ()) -> Iterator[tuple[Path, Any, Any]]:
    """(path, old value, new value) of every leaf where `old` and `new` differ, in `descend`'s order."""
    if old == new:
        return
    steps = descend(old, new)
    if steps is None:
        yield path, old, new
        return
    for step, before, after in steps:
        yield from leaves(before, after, descend, (*path, step))
