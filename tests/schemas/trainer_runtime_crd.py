"""`make schema`'s step for schemas/trainingruntime.schema.json: from the Trainer v2.3.0 CRD.

Reads `trainer.kubeflow.org_trainingruntimes.yaml` of the reference CRDs ($TRAINFORGE_SHARED, else
the folder `shared` beside the repository) and writes what `schemas.trainer_runtime.derive` makes
of it. It lives beside the test that holds the committed file to that CRD
(test_trainer_runtime_schema.py), since the reference folder is the tests'.

Run from the repository root: `python -m tests.schemas.trainer_runtime_crd [OUT]`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CRD = Path("reference") / "crds" / "trainer-v2.3.0" / "trainer.kubeflow.org_trainingruntimes.yaml"


def crd(name: str = "trainingruntimes") -> dict[str, Any]:
    import yaml

    shared = Path(os.environ.get("TRAINFORGE_SHARED") or REPO.parent / "shared")
    path = shared / CRD.with_name(f"trainer.kubeflow.org_{name}.yaml")
    return yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)


def main(argv: list[str]) -> int:
    from schemas import trainer_runtime

    out = Path(argv[0]) if argv else trainer_runtime.FILE
    out.write_text(trainer_runtime.text(crd()), encoding="utf-8")
    print(f"wrote {out} from the Trainer CRD {CRD.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
