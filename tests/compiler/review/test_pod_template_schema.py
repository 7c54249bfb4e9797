"""Editors see the compiler's pod template schema: what one refuses field by field, the other does.

`schemas/trainjob.schema.json` (what yaml-language-server and check-jsonschema read) embeds
the PodTemplateSpec definitions the compiler checks podTemplates with. Over the pod
template table (tests/compiler/pod_template_cases.py), the editor schema refuses every
field-level case the compiler refuses, and takes every valid one. The table's other
categories need the whole pod (which framework container a patch merges into, what storage
adds) or compare list items by key, which JSON Schema cannot say: there only the compiler
refuses, and this test shows the editor takes them rather than refusing at random.

No control plane: this runs in `make test-fast` too. The API server's side is
test_pod_template_oracle.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from compiler_builders import REPO, write_docs
from pod_template_cases import (
    CASES,
    FIELD,
    KEYS,
    VALID,
    compiler_errors,
    job_for,
    params,
)

EDITOR_FIELD = tuple(c for c in FIELD if c != KEYS)


@pytest.fixture(scope="module")
def editor() -> jsonschema.protocols.Validator:
    schema = json.loads((REPO / "schemas" / "trainjob.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize(("name", "framework"), [pytest.param(n, f, id=f"{n} ({f})") for n, f in params()])
def test_the_editor_schema_refuses_what_the_compiler_refuses_field_by_field(editor, tmp_path, name, framework):
    case = CASES[name]
    doc = job_for(case, framework)
    editor_errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in editor.iter_errors(doc)]
    compiler = compiler_errors(tmp_path, doc)

    if case.category in EDITOR_FIELD:
        assert compiler, "the compiler takes a field-level mistake"
        assert editor_errors, f"the editor schema takes what the compiler refuses: {compiler}"
        assert all(".podTemplate" in e or e.startswith("spec.environments") for e in editor_errors), editor_errors
    elif case.category == VALID:
        assert not compiler and not editor_errors, (compiler, editor_errors)
    else:  # needs the whole pod, or items compared by key: the compiler's alone
        assert compiler and not editor_errors, (compiler, editor_errors)


def test_check_jsonschema_flags_the_issue_example(tmp_path):
    """The command-line tool CI and pre-commit use reads the same schema, from the file."""
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: trainforge.dev/v1alpha1\nkind: TrainJob\nmetadata: {name: demo}\nspec:\n"
        "  framework: pytorch\n  image: ghcr.io/acme/train:1\n  podTemplate:\n    spec:\n      containers:\n"
        "        - name: pytorch\n          env: {WANDB_MODE: offline}\n          imagePullPolicy: Sometimes\n"
        "          resourcez: {limits: {cpu: \"2\"}}\n          resources: {limits: {memory: null}}\n",
        encoding="utf-8")
    tool = Path(sys.executable).parent / "check-jsonschema"
    proc = subprocess.run([str(tool), "--schemafile", str(REPO / "schemas" / "trainjob.schema.json"), str(job)],
                          capture_output=True, text=True, timeout=120)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    flagged = proc.stdout
    assert "containers[0].env" in flagged and "'Sometimes' is not one of" in flagged and "'resourcez'" in flagged
    assert "memory" not in flagged  # `memory: null` deletes the limit: valid



@pytest.mark.parametrize(("name", "framework"), [pytest.param(n, f, id=f"{n} ({f})") for n, f in params()])
def test_the_compilers_quick_verdict_is_jsonschemas(name, framework):
    """compiler/review/podschema.py recognises a valid podTemplate without importing jsonschema; on every
    case (and each environment's podTemplate) it says what jsonschema says."""
    from compiler.review import podschema

    doc = job_for(CASES[name], framework)
    patches = [doc["spec"]["podTemplate"]] + [env.get("podTemplate") or {} for env in
                                              (doc["spec"].get("environments") or {}).values()]
    for patch in patches:
        for part, definition in podschema.PARTS.items():
            if isinstance(patch.get(part), dict):
                schema = {"$ref": f"#/$defs/{definition}"}
                errors = list(podschema._validators()[part].iter_errors(patch[part]))
                assert podschema.conforms(patch[part], schema) == (not errors), [e.message for e in errors]


STARTUP_PROBE = """
import sys
from pathlib import Path
from compiler.pipeline import compile_sources
from schemas import podtemplate
result = compile_sources([Path(sys.argv[1])], lower_jobs=False)
errors = [d.text() for d in result.diagnostics if d.severity == "error"]
print(len(errors), podtemplate.load.cache_info().misses, "jsonschema" in sys.modules)
"""


@pytest.mark.parametrize(("pod_template", "expected"), [
    pytest.param(None, "0 0 False", id="without a podTemplate the schema is never read"),
    pytest.param({"spec": {"containers": [{"name": "pytorch", "imagePullPolicy": "Always"}]}}, "0 1 False",
                 id="a valid podTemplate reads the schema once and leaves jsonschema unimported"),
    pytest.param({"spec": {"containers": [{"name": "pytorch", "imagePullPolicy": "Sometimes"}]}}, "1 1 True",
                 id="an invalid podTemplate brings jsonschema in to say what is wrong"),
])
def test_the_schema_costs_only_specs_with_a_pod_template(tmp_path, pod_template, expected):
    from compiler_builders import job_doc

    spec = {"podTemplate": pod_template} if pod_template else {}
    write_docs(tmp_path / "job.yaml", *[job_doc("pytorch", name=f"job-{i}", **spec) for i in range(3)])
    proc = subprocess.run([sys.executable, "-c", STARTUP_PROBE, str(tmp_path)], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=True)

    errors, reads, imported = expected.split()
    assert proc.stdout.split() == [str(int(errors) * 3), reads, imported], proc.stdout + proc.stderr
