"""`status` with the credentials a team usually has: read-only, in its own namespaces. The
jobs are listed per namespace when cluster-wide lists are refused, and a refusal that
leaves nothing to read is one line naming the server and the rights needed."""

from __future__ import annotations

import json

from status_kit import compiled, project, spec, write

from compiler_builders import run_cli

READ = {"apiGroups": ["", "kubeflow.org", "trainer.kubeflow.org"], "resources": ["*"], "verbs": ["get", "list"]}


def grant(plane, namespace: str, user: str) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": user},
            "rules": [READ]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": user},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
               "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}
    plane.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                         "items": [role, binding]}))


def test_namespaced_read_only_credentials_read_the_specs_namespaces(control_plane, namespace, tmp_path):
    jobs = project(tmp_path / "repo", namespace)
    write(jobs, "a.yaml", spec("a"))
    control_plane.kubectl("apply", "--server-side", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": compiled(jobs)}))
    kubeconfig = control_plane.add_user("team-reader")
    grant(control_plane, namespace, "team-reader")
    run = run_cli("status", jobs, "--format", "json", "--kubeconfig", kubeconfig)
    assert run.exit_code == 0, run.stderr
    assert [(j["name"], j["state"]) for j in json.loads(run.stdout)["jobs"]] == [("a", "Created")]


def test_credentials_that_may_read_nothing_are_one_line_naming_the_rights(control_plane, namespace, tmp_path):
    jobs = project(tmp_path / "repo", namespace)
    write(jobs, "a.yaml", spec("a"))
    run = run_cli("status", jobs, "--kubeconfig", control_plane.add_user("nobody"))
    assert run.exit_code == 1 and run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith(f"train-compile: the cluster at {control_plane.server} refused to let these credentials "
                           "read: failed to list ")
    assert line.endswith("; they need get and list on the jobs, pods and events (read-only)")
