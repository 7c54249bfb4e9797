"""What `train-compile status` and `logs` make of a live cluster: pure views and their reading.

The commands (`compiler/cli/status.py`, `logs.py`) stay thin; what they say about a live
job is computed here from plain JSON objects, so each rule is tested without a cluster:
`specs` (the compiled side and which live job is whose), `pods` (replica types and why a
pod waits), `drift` (git against the cluster), `gather`
(the reads, through `compiler.cli.cluster` only) and `render` (text, JSON, markdown) for
`status`; `logsource` (which pods and container, prefixed lines) and `follow` (many pods
at once until the job ends) for `logs`; `options` and `clock` for both. What a job's state
is and when a waiting pod is stuck are the run semantics' (`foundation.runs`), which the
controller and `plan --live` read too.
"""
