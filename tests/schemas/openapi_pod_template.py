"""`make schema`'s first step: schemas/podtemplate.schema.json from the test world's kube-apiserver.

It starts the project's control plane (kube-apiserver v1.32 + etcd from the test world,
built on first use), reads `/openapi/v3/api/v1` and `/version`, and writes what
`schemas.podtemplate.derive` makes of them. It lives beside the test that holds the
committed file to the live server (test_pod_template_openapi.py) rather than in `schemas/`
because it needs the test world, which nothing that ships may import (.importlinter).

Run from the repository root: `python -m tests.schemas.openapi_pod_template [OUT]`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


OPENAPI_PATH = "/openapi/v3/api/v1"


def fetch(plane: Any) -> tuple[dict[str, Any], str]:
    """The core group's OpenAPI v3 document and the server's version, from a started ControlPlane."""
    status, openapi = plane.request("GET", OPENAPI_PATH)
    if status != 200:
        raise RuntimeError(f"GET {OPENAPI_PATH} answered {status}: {openapi}")
    status, version = plane.request("GET", "/version")
    if status != 200:
        raise RuntimeError(f"GET /version answered {status}: {version}")
    return openapi, version["gitVersion"]


def main(argv: list[str]) -> int:
    from schemas import podtemplate
    from testworld.assets import find_assets
    from testworld.controlplane import ControlPlane

    out = Path(argv[0]) if argv else podtemplate.FILE
    with ControlPlane(assets=find_assets(build=True), use_existing=False) as plane:
        openapi, version = fetch(plane)
    out.write_text(podtemplate.text(openapi, version=version), encoding="utf-8")
    print(f"wrote {out} from kube-apiserver {version} ({OPENAPI_PATH})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
