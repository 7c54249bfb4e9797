"""What a spec says about its pods beyond the program: the pull policy, pod-only labels and annotations.

Real published jobs keep the same few pod fields in every manifest (issue 45's corpus: an
`imagePullPolicy` on every container in 17 of 56 jobs, pod-only labels such as `app` or a
scheduler's queue, pod annotations such as `sidecar.istio.io/inject: "false"`). Each has a
first-class field under Kubernetes' own name, so a spec says it in one line instead of a
`podTemplate` patch. The names follow Helm charts' familiar pair `podLabels`/`podAnnotations`:
flat, beside the spec's own `metadata.labels` and `annotations`, which reach the job (and the
labels the pods too); these reach the pods only. The types here are single-value facts;
where each lands in a pod is lowering's (`compiler/targets/lowering.py`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt

from schemas.types import LABEL_NAME, _matching

PullPolicy = Literal["Always", "IfNotPresent", "Never"]
AnnotationKey = Annotated[str, *_matching(
    LABEL_NAME, "is not a valid annotation key; use e.g. example.com/note (a name of at most 63 characters, with an"
    " optional DNS prefix and '/')")]
PortNumber = Annotated[StrictInt, Field(ge=1, le=65535)]
