"""Plain unit tests of the pure helpers: strategic merge, YAML output, deep merge, precedence."""

from __future__ import annotations

import copy

import pytest
import yaml
from compiler_builders import compile_docs, job_doc, project_doc

from compiler import strategic
from compiler.emit import serialize
from compiler.reading.resolve import deep_merge

# --- strategic.merge -------------------------------------------------------------------------

BASE = {
    "metadata": {"labels": {"team": "nlp"}},
    "spec": {
        "containers": [
            {"name": "pytorch", "image": "train:1", "args": ["--a"], "env": [{"name": "A", "value": "1"}],
             "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]},
        ],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        "tolerations": [{"key": "a", "operator": "Exists"}],
    },
}


def test_maps_merge_recursively():
    out = strategic.merge(BASE, {"metadata": {"labels": {"extra": "x"}, "annotations": {"a": "b"}}})

    assert out["metadata"] == {"labels": {"team": "nlp", "extra": "x"}, "annotations": {"a": "b"}}
    assert out["spec"] == BASE["spec"]


def test_containers_merge_by_name_and_new_ones_are_appended():
    out = strategic.merge(BASE, {"spec": {"containers": [
        {"name": "pytorch", "imagePullPolicy": "Always", "env": [{"name": "B", "value": "2"}]},
        {"name": "sidecar", "image": "side:1"},
    ]}})

    main, sidecar = out["spec"]["containers"]
    assert main == {"name": "pytorch", "image": "train:1", "args": ["--a"], "imagePullPolicy": "Always",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}
    assert sidecar == {"name": "sidecar", "image": "side:1"}


def test_env_entries_with_the_same_name_are_replaced_in_place():
    out = strategic.merge(BASE, {"spec": {"containers": [{"name": "pytorch", "env": [{"name": "A", "value": "9"}]}]}})

    assert out["spec"]["containers"][0]["env"] == [{"name": "A", "value": "9"}]


def test_volume_mounts_merge_by_mount_path_and_volumes_by_name():
    out = strategic.merge(BASE, {"spec": {
        "containers": [{"name": "pytorch", "volumeMounts": [{"name": "other", "mountPath": "/dev/shm"},
                                                             {"name": "data", "mountPath": "/data"}]}],
        "volumes": [{"name": "dshm", "emptyDir": {"sizeLimit": "1Gi"}}],
    }})

    assert out["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "other", "mountPath": "/dev/shm"}, {"name": "data", "mountPath": "/data"},
    ]
    assert out["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]


def test_lists_without_a_merge_key_are_replaced():
    out = strategic.merge(BASE, {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}],
                                          "containers": [{"name": "pytorch", "args": ["--b"]}]}})

    assert out["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]
    assert out["spec"]["containers"][0]["args"] == ["--b"]


def test_null_deletes_a_key():
    out = strategic.merge(BASE, {"metadata": {"labels": None}, "spec": {"containers": [{"name": "pytorch", "args": None}]}})

    assert out["metadata"] == {}
    assert "args" not in out["spec"]["containers"][0]


def test_merge_modifies_neither_argument():
    base, patch = copy.deepcopy(BASE), {"spec": {"containers": [{"name": "pytorch", "env": [{"name": "B", "value": "2"}]}]}}
    patch_before = copy.deepcopy(patch)

    out = strategic.merge(base, patch)
    out["spec"]["containers"][0]["env"].append({"name": "C"})

    assert base == BASE
    assert patch == patch_before


def test_merging_the_same_patch_twice_equals_merging_it_once():
    patch = {"spec": {"containers": [{"name": "pytorch", "env": [{"name": "B", "value": "2"}]}, {"name": "side"}]}}

    once = strategic.merge(BASE, patch)

    assert strategic.merge(once, patch) == once


# --- serialize.dump ------------------------------------------------------------------------

# strings some YAML reader (1.1 or 1.2) would take for something else
AMBIGUOUS = ["3e-5", "1e3", "on", "off", "yes", "no", "y", "N", "true", "False", "null", "~", "0755", "0o17",
             "0x1F", "1.0", "42", "-7", ".5", "+1", ".inf", ".NaN", "12:30", "1:02:03", "2024-01-01", ""]
PLAIN = ["auto", "nvidia.com/gpu", "ghcr.io/acme/bert:1.4.2", "--epochs", "c10d", "16Gi", "500m", "v1"]


@pytest.mark.parametrize("value", AMBIGUOUS)
def test_strings_that_look_like_other_types_are_quoted(value):
    text = serialize.dump({"value": value})

    assert text in (f'value: "{value}"\n', f"value: '{value}'\n")
    assert yaml.safe_load(text) == {"value": value}  # a YAML 1.1 reader gets the string back


# strings YAML syntax itself could misread: indicators, comments, colons, whitespace, quotes
TRICKY = ["a: b", "# not a comment", "x #y", "*star", "&anchor", "!tag", "%pct", "@at", "`tick", "- dash",
          "[x]", "{y}", "? q", "|pipe", ">gt", "  leading", "trailing  ", "tab\there", "caf\u00e9", 'say "hi"',
          "it's", "'single'", "back\\slash", "--lr=3e-5", "http://x:80/y", "a,b", "=", "<<"]


@pytest.mark.parametrize("value", AMBIGUOUS + PLAIN + TRICKY)
def test_every_string_reads_back_as_the_same_string_in_yaml_1_1_and_1_2(value):
    from ruamel.yaml import YAML

    text = serialize.dump({"env": [{"name": "X", "value": value}]})

    assert YAML(typ="safe").load(text) == {"env": [{"name": "X", "value": value}]}
    assert yaml.safe_load(text) == {"env": [{"name": "X", "value": value}]}


@pytest.mark.parametrize("value", PLAIN)
def test_ordinary_strings_stay_plain(value):
    assert serialize.dump({"value": value}) == f"value: {value}\n"


def test_multi_line_strings_are_literal_blocks():
    text = serialize.dump({"script": "set -e\necho hi\n"})

    assert text == "script: |\n  set -e\n  echo hi\n"
    assert yaml.safe_load(text) == {"script": "set -e\necho hi\n"}


def test_numbers_and_booleans_stay_typed():
    assert serialize.dump({"replicas": 3, "suspend": True, "ratio": 0.5}) == "ratio: 0.5\nreplicas: 3\nsuspend: true\n"


def test_keys_come_in_reading_order_and_lists_keep_theirs():
    obj = {"spec": {"b": 1, "a": 2}, "metadata": {"namespace": "ns", "name": "job"}, "kind": "K",
           "apiVersion": "v1", "args": ["z", "a"]}

    assert serialize.dump(obj) == (
        "apiVersion: v1\nkind: K\nmetadata:\n  name: job\n  namespace: ns\nargs:\n- z\n- a\nspec:\n  a: 2\n  b: 1\n"
    )


def test_dump_all_separates_documents():
    assert serialize.dump_all([{"a": 1}, {"b": 2}]) == "a: 1\n---\nb: 2\n"


# --- resolve.deep_merge --------------------------------------------------------------------


def test_deep_merge_merges_mappings_and_replaces_lists_and_scalars():
    base = {"nodes": 4, "resources": {"gpu": 8, "memory": "64Gi"}, "args": ["--a", "--b"], "env": {"A": "1"}}
    override = {"nodes": 1, "resources": {"gpu": 1}, "args": ["--c"], "env": {"B": "2"}}

    assert deep_merge(base, override) == {
        "nodes": 1, "resources": {"gpu": 1, "memory": "64Gi"}, "args": ["--c"], "env": {"A": "1", "B": "2"},
    }


def test_deep_merge_modifies_neither_argument():
    base, override = {"resources": {"gpu": 8}}, {"resources": {"gpu": 1}}

    deep_merge(base, override)

    assert base == {"resources": {"gpu": 8}} and override == {"resources": {"gpu": 1}}


def test_an_override_can_replace_a_mapping_with_a_scalar():
    assert deep_merge({"gang": {"scheduler": "volcano"}}, {"gang": False}) == {"gang": False}


# --- precedence: built-in < project defaults < environment < spec < environments.<env> ---------


def _target(tmp_path, doc, project, env):
    result = compile_docs(tmp_path, doc, project=project)
    assert result.ok, [d.text() for d in result.diagnostics]
    (bundle,) = result.bundles[env]
    return bundle.target


@pytest.mark.parametrize(
    ("project", "job", "expected"),
    [
        pytest.param({}, {}, "default", id="the built-in namespace is default"),
        pytest.param({"defaults": {"namespace": "ml"}}, {}, "ml", id="project defaults beat the built-in"),
        pytest.param({"defaults": {"namespace": "ml"}, "environments": {"dev": {"namespace": "ml-dev"}}}, {},
                     "ml-dev", id="the environment beats project defaults"),
        pytest.param({"defaults": {"namespace": "ml"}, "environments": {"dev": {"namespace": "ml-dev"}}},
                     {"namespace": "nlp"}, "nlp", id="the job beats the environment"),
    ],
)
def test_namespace_precedence(tmp_path, project, job, expected):
    project.setdefault("environments", {"dev": {}})

    target = _target(tmp_path, job_doc("jax", **job), project_doc(**project), "dev")

    assert target.namespace == expected


@pytest.mark.parametrize(
    ("environment", "spec", "override", "expected"),
    [
        pytest.param({}, {}, None, None, id="no queue anywhere is no queue"),
        pytest.param({"scheduling": {"queue": "env-q"}}, {}, None, "env-q",
                     id="the environment queue applies to a job without one"),
        pytest.param({"scheduling": {"queue": "env-q"}}, {"scheduling": {"queue": "job-q"}}, None, "job-q",
                     id="the job's queue beats the environment's"),
        pytest.param({"scheduling": {"queue": "env-q"}}, {"scheduling": {"queue": "job-q"}},
                     {"scheduling": {"queue": "override-q"}}, "override-q",
                     id="the job's environments entry beats everything"),
    ],
)
def test_scheduling_precedence(tmp_path, environment, spec, override, expected):
    extra = {"environments": {"dev": override}} if override else {}
    doc = job_doc("jax", **spec, **extra)

    target = _target(tmp_path, doc, project_doc(environments={"dev": environment}), "dev")

    assert target.spec.scheduling.queue == expected


def test_an_override_for_one_environment_leaves_the_others_alone(tmp_path):
    doc = job_doc("jax", nodes=4, environments={"dev": {"nodes": 1}})
    result = compile_docs(tmp_path, doc, project=project_doc(environments={"dev": {}, "prod": {}}))

    assert {env: bundles[0].target.spec.nodes for env, bundles in result.bundles.items()} == {"dev": 1, "prod": 4}
