"""The rbac overlay: who the job's pods run as, and what that identity may do.

`serviceAccount.create` gives a ServiceAccount named after the job (or
`serviceAccount.name`) carrying the `imagePullSecrets`, and, when the user listed
`rules`, a Role with exactly those rules and a RoleBinding to it. Nothing is granted by
default and no rule is widened: an empty rule list creates no Role at all, since an
empty Role and its binding would be two objects to review that grant nothing. Every pod
template gets `serviceAccountName`. Without `create`, `serviceAccount.name` only sets
that pod field.

MPIJob launcher (the framework adapter's `launcher`): the upstream operator always creates
its own Role and RoleBinding `{job}-launcher` (get/list/watch pods, exec into the workers)
and binds them to the launcher template's `serviceAccountName`, creating a ServiceAccount
`{job}-launcher` only when that name is unset. Giving the launcher the job's own
ServiceAccount would hand those exec rights to every worker too, since they share it. So
with `create` the launcher gets a ServiceAccount of its own, `{job}-launcher` (the
operator's default name, so the operator finds it and creates none), with the same pull
secrets and the user's rules; the operator's exec Role binds to it alone, and workers keep
only the user's rules.
"""

from __future__ import annotations

from overlays import merge_ops, waves
from schemas.bundle import Bundle, Component, JsonObject
from schemas.trainjob import PolicyRule, ServiceAccount

NAME = "rbac"
RBAC_API = "rbac.authorization.k8s.io/v1"


def _metadata(bundle: Bundle, name: str) -> JsonObject:
    target = bundle.target
    meta: JsonObject = {"name": name, "namespace": target.namespace}
    if target.labels:
        meta["labels"] = dict(sorted(target.labels.items()))
    return meta


def _rule(rule: PolicyRule) -> JsonObject:
    out: JsonObject = {
        "apiGroups": list(rule.apiGroups),
        "resources": list(rule.resources),
        "verbs": list(rule.verbs),
    }
    if rule.resourceNames:
        out["resourceNames"] = list(rule.resourceNames)
    return out


def _service_account(bundle: Bundle, name: str, sa: ServiceAccount) -> JsonObject:
    obj: JsonObject = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(bundle, name)}
    if sa.imagePullSecrets:
        obj["imagePullSecrets"] = [{"name": secret} for secret in sa.imagePullSecrets]
    return obj


def _role_objects(bundle: Bundle, name: str, sa: ServiceAccount, subjects: list[str]) -> list[JsonObject]:
    if not sa.rules:
        return []
    role = {
        "apiVersion": RBAC_API,
        "kind": "Role",
        "metadata": _metadata(bundle, name),
        "rules": [_rule(rule) for rule in sa.rules],
    }
    binding = {
        "apiVersion": RBAC_API,
        "kind": "RoleBinding",
        "metadata": _metadata(bundle, name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [
            {"kind": "ServiceAccount", "name": subject, "namespace": bundle.target.namespace}
            for subject in subjects
        ],
    }
    return [role, binding]


def account_names(bundle: Bundle) -> dict[str, str]:
    """Replica type -> serviceAccountName (empty when the job uses the namespace default)."""
    sa = bundle.target.spec.serviceAccount
    if sa is None or (sa.name is None and not sa.create):
        return {}
    own = sa.name or bundle.target.name
    names = {rtype: own for rtype, _ in bundle.pod_templates()}
    launcher = bundle.adapter.launcher
    # the operator's kind only (a Trainer v2 runtime makes no exec Role of its own)
    if sa.create and launcher is not None and bundle.kind == bundle.adapter.facts.kind \
            and launcher.replica_type in names:
        names[launcher.replica_type] = f"{bundle.target.name}-{launcher.names[0]}"
    return names


def apply(bundle: Bundle) -> Bundle:
    sa = bundle.target.spec.serviceAccount
    names = account_names(bundle)
    resources: list[JsonObject] = []
    if sa is not None and sa.create:
        accounts = sorted(set(names.values()))
        resources += [_service_account(bundle, name, sa) for name in accounts]
        resources += _role_objects(bundle, sa.name or bundle.target.name, sa, accounts)
    patches: list[JsonObject] = []
    for rtype, spec_path in bundle.pod_templates():
        if rtype in names:
            patches += merge_ops(bundle.job, spec_path, {"serviceAccountName": names[rtype]})
    return bundle.with_component(Component(NAME, tuple(waves.annotate(r) for r in resources), tuple(patches)))
