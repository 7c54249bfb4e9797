"""What the API server's resource validation would refuse in the requests and limits a spec asks for.

The models check each value alone (a quantity, a resource name, no `cpu` under `devices`); the
API server's `ValidateResourceRequirements` also relates them, and the operator meets its
refusal only when it creates the pods, long after the sync. So, for the job's resources and
each role's own, as one container will carry them (`lowering.resource_requirements`):

- a request above its limit (`cpu: 8` with `limits.cpu: 4`);
- an extended resource (`vpc.amazonaws.com/efa`) that is not a whole number;
- hugepages that are not a whole number of pages, or in a container that asks for neither cpu
  nor memory ("HugePages require cpu or memory");
- the environment's GPU resource under `devices`, where `gpu` says it (and places the pods).

Each is reported at the field that wrote it. Registered in `compiler/review/rules.py`.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from typing import Iterator, Optional

from compiler.diagnostics import Diagnostic
from compiler.reading.resolve import Target
from schemas import quantity
from schemas.loader import Loc
from schemas.trainjob import Resources
from schemas.types import HUGEPAGES, page_size


def asked(target: Target) -> list[tuple[Loc, Resources]]:
    """(loc, resources) for the job's resources and every role's own, in the spec's order."""
    out: list[tuple[Loc, Resources]] = [(("resources",), target.spec.resources)]
    for name, role in target.spec.roles.items():
        if role.resources is not None:
            out.append((("roles", name, "resources"), role.resources))
    return out


def _amount(value: str) -> Optional[Decimal]:
    try:
        return quantity.parse(value, signed=False).amount
    except ValueError:  # the model's quantity type refused it already
        return None


def _within_limits(target: Target, at: Loc, resources: Resources) -> Iterator[Diagnostic]:
    limits = resources.limits
    if limits is None:
        return
    for name in ("cpu", "memory"):
        request, limit = getattr(resources, name), getattr(limits, name)
        if request is None or limit is None:
            continue
        low, high = _amount(request), _amount(limit)
        if low is not None and high is not None and low > high:
            yield target.view.error(
                at + ("limits", name),
                f"the {name} limit {limit} is below the request {request}, which the API server refuses",
                f"raise limits.{name} to at least {request}, or lower {name}",
            )


def _devices(target: Target, at: Loc, resources: Resources) -> Iterator[Diagnostic]:
    gpu_resource = target.environment.gpuResource
    for name, value in resources.devices.items():
        loc = at + ("devices", name)
        amount = _amount(value)
        if name == gpu_resource:
            yield target.view.error(
                loc, f"{name} is the GPU resource of environment '{target.env_name}'",
                f"write gpu: {value} instead (it asks for {name} and places the pods by gpuType)", prefer_key=True)
        elif amount is None:
            continue
        elif name.startswith(HUGEPAGES):
            yield from _hugepages(target, loc, resources, name, value, amount)
        elif "/" in name and amount != amount.to_integral_value():
            yield target.view.error(
                loc, f"{name} is an extended resource, which the API server counts in whole units; {value} is not one",
                "write a whole number, e.g. 1")


def _hugepages(target: Target, loc: Loc, resources: Resources, name: str, value: str,
               amount: Decimal) -> Iterator[Diagnostic]:
    size = page_size(name)
    if size is not None and amount % size != 0:
        yield target.view.error(
            loc, f"{value} of {name} is not a whole number of {name[len(HUGEPAGES):]} pages, which the API server refuses",
            f"write a multiple of {name[len(HUGEPAGES):]}, e.g. {_pages(amount, size, name)}")
    limits = resources.limits
    if resources.cpu is None and resources.memory is None and (limits is None or (limits.cpu is None and limits.memory is None)):
        yield target.view.error(
            loc, f"a container with {name} must also ask for cpu or memory (the API server refuses it: \"HugePages"
            " require cpu or memory\")",
            "set memory (the memory the program uses beside the huge pages) in the same resources", prefer_key=True)


def _pages(amount: Decimal, size: Decimal, name: str) -> str:
    """`amount` rounded up to whole pages, in the page size's unit."""
    pages = int((amount / size).to_integral_value(rounding=ROUND_CEILING))
    unit = name[len(HUGEPAGES):].lstrip("0123456789.")
    per_page = size / quantity.MULTIPLIERS.get(unit, Decimal(1))
    total = per_page * max(pages, 1)
    return f"{int(total) if total == total.to_integral_value() else total}{unit}"


def check(target: Target) -> Iterator[Diagnostic]:
    """Every resource refusal of one job in one environment (registered in `rules.RULES`)."""
    for at, resources in asked(target):
        yield from _within_limits(target, at, resources)
        yield from _devices(target, at, resources)
