"""What upstream's validating webhooks refuse, as one rule table rendered twice: Python and CEL.

The Kubeflow Training Operator v1.9.4 refuses bad PyTorchJobs, TFJobs, XGBoostJobs,
PaddleJobs and JAXJobs at admission (`pkg/webhooks/`). trainforge checks the same rules in
three places: the compiler on its own output (review time), the controller's
ValidatingAdmissionPolicies (`controller/generators/admission_policies.py` writes them into
`controller/install/admission/`) and the controller at reconcile time on clusters without
those policies. To keep the three from drifting, every rule is written once here: one
message template (upstream's `field.Error` text: path, error type, detail) rendered by both
sides, and the rule's condition twice, in Python and in CEL, side by side in one `Rule`;
`tests/admission/test_admission_rules.py` and `test_admission_policies.py` run one table of jobs
(`tests/admission/admission_cases.py`) through both.

Upstream's order is kept: job-level rules, then replica rules (one rule at a time over the
replica types; upstream walks a Go map, so its order across replica types is random, and
ours is sorted in Python and map order in CEL), then the rules that need every replica.
Several errors read as Kubernetes aggregates them: `[first, second]`.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from foundation.frameworks import BY_KIND
from foundation.frameworks.operator import (
    DNS1035,
    DNS1035_ERROR,
    TOO_LONG,
    WebhookRules,
    name_reasons,
)

MANAGED_BY = ("kueue.x-k8s.io/multikueue", "kubeflow.org/training-operator")  # upstream: a set, printed in random order
OPERATOR = "kubeflow.org/training-operator"
NPROC_DEPRECATED = "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"


@dataclass(frozen=True)
class KindRules:
    """One kind's webhook: its shape from the adapter's facts, its rules from the adapter's
    `Operator.webhook` (every flag is one upstream `if`)."""

    kind: str
    field: str  # the replica map, e.g. pytorchReplicaSpecs
    container: str  # the default container every replica must have
    allowed: tuple[str, ...] | None  # replica types upstream accepts (None: any, TFJob)
    rules: WebhookRules

    @property
    def specs(self) -> str:
        return f"spec.{self.field}"


KIND_RULES: dict[str, KindRules] = {
    adapter.facts.kind: KindRules(
        adapter.facts.kind, adapter.facts.replica_specs, adapter.facts.container,
        None if adapter.operator.webhook.any_replica_type else adapter.facts.replica_types, adapter.operator.webhook,
    )
    for adapter in BY_KIND.values() if adapter.operator.webhook is not None
}


# ---------------------------------------------------------------------- messages, rendered twice
def go_quote(value: str) -> str:
    """Go's %q (and json.Marshal) for the strings that reach these messages."""
    return json.dumps(value, ensure_ascii=False)


def cel_str(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class Text:
    """A message template with `{slots}`: `.py(**values)` is the text, `.cel(**exprs)` a CEL string expression."""

    def __init__(self, template: str, **fixed: str) -> None:
        self.template = template
        self.fixed = fixed

    def fix(self, **fixed: str) -> Text:
        """The same template with more slots filled in as text (a kind's replica types)."""
        return Text(self.template, **self.fixed, **fixed)

    def py(self, **values: Any) -> str:
        return self.template.format(**self.fixed, **values)

    def cel(self, **exprs: str) -> str:
        parts: list[tuple[bool, str]] = []  # (literal?, text or expression)
        for literal, slot, _, _ in string.Formatter().parse(self.template):
            text = literal + (self.fixed[slot] if slot in self.fixed else "")
            if text and parts and parts[-1][0]:
                parts[-1] = (True, parts[-1][1] + text)
            elif text:
                parts.append((True, text))
            if slot and slot not in self.fixed:
                parts.append((False, exprs[slot]))
        return " + ".join(cel_str(text) if literal else text for literal, text in parts)


def supported(values: tuple[str, ...]) -> str:
    return ", ".join(go_quote(v) for v in values)


# ---------------------------------------------------------------------- the rules
@dataclass(frozen=True)
class Job:
    """The Python side's view of one job (CEL reads `object`, `oldObject` and `variables`)."""

    name: str
    spec: Mapping[str, Any]
    specs: Mapping[str, Any] | None
    old_spec: Mapping[str, Any] | None  # on update

    def replica(self, key: str) -> Mapping[str, Any]:
        value = (self.specs or {}).get(key)
        return value if isinstance(value, Mapping) else {}

    def containers(self, key: str) -> list[Any]:
        found = ((self.replica(key).get("template") or {}).get("spec") or {}).get("containers")
        return found if isinstance(found, list) else []


def _managed_by(spec: Mapping[str, Any] | None) -> Any:
    run_policy = (spec or {}).get("runPolicy")
    return run_policy.get("managedBy") if isinstance(run_policy, Mapping) else None


# CEL building blocks over the admission request
SPECS = "variables.specs"
KEYS = f"{SPECS}.map(k, k)"
MB = "object.spec.runPolicy.managedBy"
HAS_MB = "has(object.spec.runPolicy) && has(object.spec.runPolicy.managedBy)"
OLD_MB = "oldObject.spec.runPolicy.managedBy"
HAS_OLD_MB = "has(oldObject.spec.runPolicy) && has(oldObject.spec.runPolicy.managedBy)"
HAS_ELASTIC = "has(object.spec.elasticPolicy)"
HAS_NPROC = f"{HAS_ELASTIC} && has(object.spec.elasticPolicy.nProcPerNode)"
NULL = "'null'"


def containers_cel(key: str) -> str:
    r = f"{SPECS}[{key}]"
    return (f"(has({r}.template) && has({r}.template.spec) && has({r}.template.spec.containers)"
            f" ? {r}.template.spec.containers : [])")


def path_cel(rules: KindRules, key: str) -> str:
    return f"{cel_str(rules.specs + '[')} + {key} + ']'"


@dataclass(frozen=True)
class Rule:
    """One upstream check: when it applies, its Python and its CEL (each yields a list of messages)."""

    name: str
    applies: Callable[[KindRules], bool]
    py: Callable[[KindRules, Job], list[str]]
    cel: Callable[[KindRules], str]  # a CEL list<string> expression
    update_only: bool = False


NAME = Text('metadata.name: Invalid value: "{name}": should match: {reasons}')
IMMUTABLE = Text("spec.runPolicy.managedBy: Invalid value: {value}: field is immutable")
MANAGED = Text("spec.runPolicy.managedBy: Unsupported value: {value}: supported values: {allowed}",
               allowed=supported(MANAGED_BY))
SPECS_REQUIRED = Text("{specs}: Required value: must be required")
ELASTIC_NEEDS = Text("{specs}[{type}]: Required value: must be configured if elastic policy is used")
NPROC_FORBIDDEN = Text("spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode")
UNSUPPORTED_KEY = Text("{path}: Unsupported value: {value}: supported values: {allowed}")
CONTAINERS = Text("{path}.template.spec.containers: Required value: must be specified")
IMAGE = Text("{path}.template.spec.containers[{index}].image: Required value: must be required")
DEFAULT_CONTAINER = Text("{path}.template.spec.containers: Required value: must have at least one container with name {name}")
EXACTLY_ONE = Text("{specs}[{type}].replicas: Forbidden: must be 1")
AT_LEAST_ONE = Text("{path}.replicas: Forbidden: must be at least 1")
REQUIRED = Text("{specs}[{type}]: Required value: must be present")
NOT_BOTH = Text("{specs}: Forbidden: must not have more than 1 {one} or {other} role")


def _keys(job: Job) -> list[str]:
    return sorted(job.specs or {})


def _has_image(c: Any) -> bool:
    return isinstance(c, Mapping) and bool(c.get("image"))


def _replicas(job: Job, key: str) -> Any:
    return job.replica(key).get("replicas")


# the messages that name one of the kind's replica types, that type filled in as text (CEL too)
def _elastic_needs(rules: KindRules) -> Text:
    return ELASTIC_NEEDS.fix(type=str(rules.rules.elastic))


def _exactly_one(rules: KindRules) -> Text:
    return EXACTLY_ONE.fix(type=str(rules.rules.exactly_one))


def _required(rules: KindRules) -> Text:
    return REQUIRED.fix(type=str(rules.rules.required))


def _not_both(rules: KindRules) -> Text:
    one, other = rules.rules.not_both or ("", "")
    return NOT_BOTH.fix(one=one, other=other)


def _default_container_name(rules: KindRules) -> str:
    return go_quote(rules.container) if rules.rules.quote_container else rules.container


RULES: tuple[Rule, ...] = (
    Rule("name is a DNS-1035 label", lambda r: True,
         lambda r, j: [NAME.py(name=j.name, reasons=",".join(name_reasons(j.name)))] if name_reasons(j.name) else [],
         lambda r: "(size(bytes(object.metadata.name)) > 63 || !object.metadata.name.matches('^" + DNS1035 + "$')) ? ["
         + NAME.cel(name="object.metadata.name", reasons="((size(bytes(object.metadata.name)) > 63 ? ["
                    + cel_str(TOO_LONG) + "] : []) + (object.metadata.name.matches('^" + DNS1035 + "$') ? [] : ["
                    + cel_str(DNS1035_ERROR) + "])).join(',')") + "] : []"),
    Rule("managedBy is immutable", lambda r: True,
         lambda r, j: [IMMUTABLE.py(value=go_quote(new) if new is not None else "null")]
         if (new := _managed_by(j.spec)) != _managed_by(j.old_spec) else [],
         lambda r: f"request.operation == 'UPDATE' && (({HAS_MB}) != ({HAS_OLD_MB}) || (({HAS_MB}) && {MB} != {OLD_MB}))"
         f" ? [{IMMUTABLE.cel(value=f'(({HAS_MB}) ? strings.quote({MB}) : {NULL})')}] : []",
         update_only=True),
    Rule("managedBy is supported", lambda r: True,
         lambda r, j: [MANAGED.py(value=go_quote(mb))] if (mb := _managed_by(j.spec)) is not None and mb not in MANAGED_BY
         else [],
         lambda r: f"({HAS_MB}) && !({MB} in {json.dumps(list(MANAGED_BY))})"
         f" ? [{MANAGED.cel(value=f'strings.quote({MB})')}] : []"),
    Rule("elastic policy needs its replica type", lambda r: r.rules.elastic is not None,
         lambda r, j: [_elastic_needs(r).py(specs=r.specs)]
         if "elasticPolicy" in j.spec and r.rules.elastic not in (j.specs or {}) else [],
         lambda r: f"{HAS_ELASTIC} && !({cel_str(str(r.rules.elastic))} in {SPECS})"
         f" ? [{_elastic_needs(r).cel(specs=cel_str(r.specs))}] : []"),
    Rule("nProcPerNode not with nprocPerNode", lambda r: r.rules.elastic is not None,
         lambda r, j: [NPROC_FORBIDDEN.py()] if isinstance(j.spec.get("elasticPolicy"), Mapping)
         and j.spec["elasticPolicy"].get("nProcPerNode") is not None and j.spec.get("nprocPerNode") is not None else [],
         lambda r: f"{HAS_NPROC} && has(object.spec.nprocPerNode) ? [{NPROC_FORBIDDEN.cel()}] : []"),
    Rule("replica specs present", lambda r: True,
         lambda r, j: [SPECS_REQUIRED.py(specs=r.specs)] if j.specs is None else [],
         lambda r: f"!has(object.spec.{r.field}) ? [{SPECS_REQUIRED.cel(specs=cel_str(r.specs))}] : []"),
    Rule("replica types upstream knows", lambda r: r.allowed is not None,
         lambda r, j: [UNSUPPORTED_KEY.py(path=f"{r.specs}[{k}]", value=go_quote(k), allowed=supported(r.allowed or ()))
                       for k in _keys(j) if k not in (r.allowed or ())],
         lambda r: f"{KEYS}.filter(k, !(k in {json.dumps(list(r.allowed or ()))})).map(k, "
         + UNSUPPORTED_KEY.cel(path=path_cel(r, "k"), value="strings.quote(k)", allowed=cel_str(supported(r.allowed or ())))
         + ")"),
    Rule("containers present", lambda r: True,
         lambda r, j: [CONTAINERS.py(path=f"{r.specs}[{k}]") for k in _keys(j) if not j.containers(k)],
         lambda r: f"{KEYS}.filter(k, size({containers_cel('k')}) == 0).map(k, {CONTAINERS.cel(path=path_cel(r, 'k'))})"),
    Rule("every container has an image", lambda r: True,
         lambda r, j: [IMAGE.py(path=f"{r.specs}[{k}]", index=i)
                       for k in _keys(j) for i, c in enumerate(j.containers(k)) if not _has_image(c)],
         # CEL in Kubernetes 1.32 has no flatten: one joined string per replica type, counted apart (see policy_cel)
         lambda r: f"{KEYS}.map(k, {containers_cel('k')}.filter(c, !has(c.image) || c.image == '').map(c, "
         + IMAGE.cel(path=path_cel(r, "k"), index=f"string({containers_cel('k')}.indexOf(c))") + "))"),
    Rule("the default container is present", lambda r: True,
         lambda r, j: [DEFAULT_CONTAINER.py(path=f"{r.specs}[{k}]", name=_default_container_name(r)) for k in _keys(j)
                       if not any(isinstance(c, Mapping) and c.get("name") == r.container for c in j.containers(k))],
         lambda r: f"{KEYS}.filter(k, !{containers_cel('k')}.exists(c, has(c.name) && c.name == {cel_str(r.container)}))"
         f".map(k, {DEFAULT_CONTAINER.cel(path=path_cel(r, 'k'), name=cel_str(_default_container_name(r)))})"),
    Rule("one replica type has exactly one replica", lambda r: r.rules.exactly_one is not None,
         lambda r, j: [_exactly_one(r).py(specs=r.specs)]
         if (t := str(r.rules.exactly_one)) in (j.specs or {}) and _replicas(j, t) != 1 else [],
         lambda r: f"{cel_str(t := str(r.rules.exactly_one))} in {SPECS} && (!has({SPECS}.{t}.replicas)"
         f" || {SPECS}.{t}.replicas != 1) ? [{_exactly_one(r).cel(specs=cel_str(r.specs))}] : []"),
    Rule("the other replica types at least one", lambda r: r.rules.others_at_least_one,
         lambda r, j: [AT_LEAST_ONE.py(path=f"{r.specs}[{k}]") for k in _keys(j)
                       if k != r.rules.exactly_one and isinstance(n := _replicas(j, k), int) and n < 1],
         lambda r: f"{KEYS}.filter(k, k != {cel_str(str(r.rules.exactly_one))} && has({SPECS}[k].replicas)"
         f" && {SPECS}[k].replicas < 1).map(k, {AT_LEAST_ONE.cel(path=path_cel(r, 'k'))})"),
    Rule("a replica type is present", lambda r: r.rules.required is not None,
         lambda r, j: [_required(r).py(specs=r.specs)] if r.rules.required not in (j.specs or {}) else [],
         lambda r: f"!({cel_str(str(r.rules.required))} in {SPECS}) ? [{_required(r).cel(specs=cel_str(r.specs))}] : []"),
    Rule("not both of two replica types", lambda r: r.rules.not_both is not None,
         lambda r, j: [_not_both(r).py(specs=r.specs)] if set(r.rules.not_both or ()) <= set(j.specs or {}) else [],
         lambda r: " && ".join(f"{cel_str(t)} in {SPECS}" for t in r.rules.not_both or ())
         + f" ? [{_not_both(r).cel(specs=cel_str(r.specs))}] : []"),
)
NESTED = frozenset({"every container has an image"})  # its CEL yields one list per replica type

WARNINGS: tuple[Rule, ...] = (
    Rule("elasticPolicy.nProcPerNode is deprecated", lambda r: r.rules.elastic is not None,
         lambda r, j: [NPROC_DEPRECATED] if isinstance(j.spec.get("elasticPolicy"), Mapping)
         and j.spec["elasticPolicy"].get("nProcPerNode") is not None else [],
         lambda r: f"{HAS_NPROC} ? [{cel_str(NPROC_DEPRECATED)}] : []"),
)


def rules_for(kind: str) -> tuple[KindRules, list[Rule]]:
    rules = KIND_RULES[kind]
    return rules, [rule for rule in RULES if rule.applies(rules)]


def _view(job: Mapping[str, Any], rules: KindRules, old: Mapping[str, Any] | None) -> Job:
    spec = job.get("spec") if isinstance(job.get("spec"), Mapping) else {}
    specs = spec.get(rules.field)
    old_spec = old.get("spec") if old is not None and isinstance(old.get("spec"), Mapping) else None
    return Job(name=str((job.get("metadata") or {}).get("name", "")), spec=spec,
               specs=specs if isinstance(specs, Mapping) else None, old_spec=old_spec if old is not None else None)


def errors(job: Mapping[str, Any], kind: str, old: Mapping[str, Any] | None = None) -> list[str]:
    """Every message upstream's webhook gives for `job` (on update, `old` is the stored object)."""
    rules, chosen = rules_for(kind)
    view = _view(job, rules, old)
    found: list[str] = []
    for rule in chosen:
        if rule.update_only and old is None:
            continue
        found += [m for m in rule.py(rules, view) if m not in found]  # Kubernetes' aggregate drops repeats
    return found


def warnings(job: Mapping[str, Any], kind: str) -> list[str]:
    rules = KIND_RULES[kind]
    view = _view(job, rules, None)
    return [m for rule in WARNINGS if rule.applies(rules) for m in rule.py(rules, view)]


def aggregate(messages: list[str]) -> str:
    """Kubernetes' aggregate error text: one message as is, several as `[a, b]`."""
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


# ---------------------------------------------------------------------- the reconcilers' checks
def reconciler_errors(job: Mapping[str, Any], kind: str) -> list[str]:
    """Upstream's reconcile-time check of a kind its webhook does not validate (MPIJob v1.9.4,
    MXJob v1.8.1; the adapter's ``Operator.reconciler_check``): [] or [its first error]."""
    check = BY_KIND[kind].operator.reconciler_check
    return check(job) if check is not None else []
