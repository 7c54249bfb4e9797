"""Random podTemplate patches, merged by the compiler and by `kubectl kustomize`.

The table in test_strategic_directives.py holds one directive per case; users combine
them. This draws patches (seeded, so every run draws the same ones) that mix deletes,
replaces, nulls and plain merges over the same base template, keeps those the compiler
accepts (`strategic.problems` finds nothing), and applies all of them in one kustomize
run. Keyed lists are compared by key, as in the table. A patch where kustomize writes a
directive into its output (it does for a `- $patch: replace` list an existing container
does not have yet; the API server applies it, see the table) is not compared, and there
must be few of those, so the comparison is never empty.
"""

from __future__ import annotations

import json
import random
import subprocess
from typing import Any, Callable

import yaml

from compiler import strategic
from test_examples_render import KUBECTL
from test_strategic_directives import BASE, DELETE, REPLACE, _pod_templates, normalized

SEED, COUNT = 20261124, 150


class Draw:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def some(self, items: list[Any]) -> list[Any]:
        return self.rng.sample(items, self.rng.randint(0, len(items)))

    def map(self, values: dict[str, Callable[[], Any]]) -> dict[str, Any]:
        """A map patch: deleted, replaced or merged, with some fields set or nulled."""
        if self.chance(0.15):
            return dict(DELETE)
        out: dict[str, Any] = dict(REPLACE) if self.chance(0.25) else {}
        for field in self.some(list(values)):
            out[field] = None if self.chance(0.3) else values[field]()
        return out

    def keyed(self, key: str, names: list[Any], fields: dict[str, Callable[[], Any]]) -> list[dict[str, Any]]:
        """A keyed list patch: items deleted or merged, sometimes the whole list replaced."""
        replace = self.chance(0.15)
        items = [dict(REPLACE)] if replace else []
        for name in self.some(names):
            if not replace and self.chance(0.3):
                items.append({key: name, **DELETE})
            else:
                items.append({key: name, **{f: make() for f, make in fields.items() if self.chance(0.5)}})
        self.rng.shuffle(items)
        return items

    def container(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name}
        if name == "added" or self.chance(0.3):
            out["image"] = self.rng.choice(["img:2", "img:3"])
        if self.chance(0.4):
            out["env"] = self.keyed("name", ["A", "B", "C", "D"], {"value": lambda: self.rng.choice(["v", None])})
        if self.chance(0.4):
            out["securityContext"] = self.map({"privileged": lambda: True, "runAsUser": lambda: 1000,
                                               "runAsNonRoot": lambda: True, "capabilities": lambda: {"drop": ["ALL"]},
                                               "seLinuxOptions": lambda: {"type": "container_t"}})
        if self.chance(0.3):
            out["ports"] = self.keyed("containerPort", [23456, 9090, 7000], {"name": lambda: self.rng.choice("ab")})
        if self.chance(0.3):
            out["volumeMounts"] = self.keyed("mountPath", ["/dev/shm", "/data", "/x"],
                                             {"name": lambda: self.rng.choice(["dshm", "data", "x"])})
        if self.chance(0.2):
            out["args"] = self.rng.choice([None, ["--z"], []])
        return out

    def patch(self) -> dict[str, Any]:
        text = lambda: self.rng.choice(["v1", "v2"])  # noqa: E731
        metadata = {k: self.map({"team": text, "extra": text}) for k in ("labels", "annotations") if self.chance(0.3)}
        spec: dict[str, Any] = {}
        if self.chance(0.7):
            spec["containers"] = [{"name": n, **DELETE} if n != "added" and self.chance(0.25) else self.container(n)
                                  for n in self.some(["pytorch", "debug", "added"])]
        if self.chance(0.3):
            spec["volumes"] = self.keyed("name", ["dshm", "data", "x"], {"emptyDir": lambda: {"medium": "Memory"}})
        if self.chance(0.3):
            spec["securityContext"] = self.map({"runAsUser": lambda: 1000, "fsGroup": lambda: 3,
                                                "seLinuxOptions": lambda: {"type": "container_t"}})
        if self.chance(0.3):
            spec["nodeSelector"] = self.map({"pool": text, "zone": text, "new": text})
        if self.chance(0.2):
            spec["tolerations"] = self.rng.choice([None, [{"key": "b", "operator": "Exists"}]])
        if self.chance(0.2):
            spec["imagePullSecrets"] = self.keyed("name", ["reg-a", "reg-b", "reg-c"], {})
        return {k: v for k, v in (("metadata", metadata), ("spec", spec)) if v}


def accepted_patches() -> list[dict[str, Any]]:
    draw, out = Draw(SEED), []
    while len(out) < COUNT:
        patch = draw.patch()
        if not list(strategic.problems(patch)):
            out.append(patch)
    return out


def test_random_patches_merge_as_kubectl_kustomize_merges_them(tmp_path):
    patches = accepted_patches()
    (tmp_path / "base.yaml").write_text("".join(f"---\n{json.dumps(t)}\n" for t in _pod_templates([BASE] * COUNT)))
    for i, template in enumerate(_pod_templates(patches)):
        (tmp_path / f"patch-{i}.json").write_text(json.dumps(template))
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [base.yaml]\npatches:\n" + "".join(f"- path: patch-{i}.json\n" for i in range(COUNT)))

    proc = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=300)

    assert proc.returncode == 0, proc.stderr
    theirs = {doc["metadata"]["name"]: doc["template"] for doc in yaml.safe_load_all(proc.stdout) if doc}
    compared, differ = 0, []
    for i, patch in enumerate(patches):
        kustomized = theirs[f"case-{i}"]
        if list(strategic.directives(kustomized)):
            continue  # kustomize wrote the directive out (see the module docstring)
        compared += 1
        if normalized(strategic.merge(BASE, patch)) != normalized(kustomized):
            differ.append(json.dumps(patch))
    assert differ == []
    assert compared >= COUNT * 0.9
