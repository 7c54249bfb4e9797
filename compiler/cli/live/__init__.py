"""What `train-compile status` and `logs` make of a live cluster: pure views and their reading.

The commands (`compiler/cli/status.py`, `logs.py`) stay thin; everything they say about a
live job is computed here from plain JSON objects, so each rule is tested without a
cluster: `specs` (the compiled side and matching), `state` (a job's condition),
`pods` (replica types and why a pod waits), `drift` (git against the cluster),
`gather` (the reads, through `compiler.cli.cluster` only) and `render` (text, JSON,
markdown). `clock` holds the durations both commands print and parse.
"""
