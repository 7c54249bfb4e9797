"""Overlay steps, applied to every lowered bundle in this one declared order.

Each step is a pure function `apply(bundle) -> bundle` that adds (or replaces) its own
kustomize Component; applying a step twice equals applying it once, and no step
mutates its input. The order matters only for reading the output: rbac, storage,
scheduling.
"""

from __future__ import annotations

from typing import Callable

from compiler.bundle import Bundle

Step = Callable[[Bundle], Bundle]

STEPS: tuple[Step, ...] = ()
