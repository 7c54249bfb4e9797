"""`train-compile import`: existing Kubeflow job manifests to TrainJob specs, the same jobs.

Read (`manifests`) -> clean and read first-class fields (`run.prepare`, `shapes`, `lifting`)
-> compile in memory and compare (`sameness`: the contract of "the same job") -> keep what
differs in podTemplate (`residual`) -> write (`writing`), with the project settings the jobs
need (`project`). docs/import.md is the user's page.
"""
