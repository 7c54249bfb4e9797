"""`spec.storage`: the volumes mounted into every pod that runs the program, one source each.

A claim (an existing PVC) or `size` (a new PVC named `<job>-<name>`) is data that outlives the
job; `configMap`, `secret`, `hostPath` and `emptyDir` are what real published jobs mount beside
it (issue 45's corpus: a script from a ConfigMap, a cloud credential from a Secret, the node's
`/dev/infiniband` or `/dev/shm`, scratch space). Each source keeps Kubernetes' own name and the
one value a job gives it (the object's name, the node's path); `emptyDir` is Kubernetes' object.
Exactly one source per volume; which one, and how it lands in a pod, is `overlays/storage.py`'s.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from schemas.strict import StrictModel
from schemas.types import Name, NonEmptyStr, ObjectName, Quantity, _matching

ABSOLUTE_PATH = re.compile(r"^/.*$")
HostPath = Annotated[str, *_matching(ABSOLUTE_PATH, "is not an absolute path; write the node's path, e.g. /dev/infiniband")]
SOURCES = ("claim", "size", "configMap", "secret", "hostPath", "emptyDir")
NEW_CLAIM_ONLY = ("storageClass", "accessMode")


class EmptyDir(StrictModel):
    """Kubernetes' emptyDir: scratch space on the node's disk, or in memory (`medium: Memory`)."""

    medium: Optional[Literal["Memory"]] = Field(
        None, description="Memory: a tmpfs counted against the pod's memory; unset: the node's disk.")
    sizeLimit: Optional[Quantity] = Field(None, description="The most it may hold.")


class Volume(StrictModel):
    """A volume mounted into every pod that runs the program, from exactly one source."""

    name: Name = Field(description="Volume name; a new PVC is named <job>-<name>.")
    mountPath: NonEmptyStr = Field(description="Where the volume appears in the containers.")
    claim: Optional[NonEmptyStr] = Field(None, description="Existing PersistentVolumeClaim.")
    size: Optional[Quantity] = Field(None, description="Create a PVC of this size.")
    storageClass: Optional[NonEmptyStr] = None
    accessMode: Optional[
        Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]
    ] = None
    configMap: Optional[ObjectName] = Field(None, description="A ConfigMap of the job's namespace, its keys as files.")
    secret: Optional[ObjectName] = Field(None, description="A Secret of the job's namespace, its keys as files.")
    hostPath: Optional[HostPath] = Field(
        None, description="A path on the node (the baseline pod security level refuses it).")
    emptyDir: Optional[EmptyDir] = Field(None, description="Scratch space that lives as long as the pod: {} or"
                                         " {medium: Memory, sizeLimit: 8Gi}.")
    readOnly: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> "Volume":
        given = [s for s in SOURCES if getattr(self, s) is not None]
        if len(given) > 1:
            raise ValueError(f"has {' and '.join(given)}; keep one source: claim (an existing PVC), size (a new one),"
                             " configMap, secret, hostPath or emptyDir")
        if not given:
            raise ValueError("has no source; add claim: <existing PVC>, size: <e.g. 100Gi>, configMap: <name>,"
                             " secret: <name>, hostPath: <node path> or emptyDir: {}")
        if given[0] != "size" and (self.storageClass or self.accessMode):
            raise ValueError("storageClass and accessMode only apply to a new PVC; drop them or use size")
        return self
