"""How far a run has got: the progress protocol, once, for the controller, the compiler and status.

Training code reports its progress (a percentage, the seconds it expects to need still, up to
256 named metrics) over HTTPS with its pod's projected ServiceAccount token, in the shape
Kubeflow Trainer v2's TrainJobStatus feature defines (`POST .../status` with a
`trainerStatus` object). Trainer v2 serves it for TrainJobs; train-controller serves the same
protocol for the kubeflow.org/v1 jobs and keeps the answer in the job's
`status.trainerStatus`, so one reader serves both targets:

    protocol  the wire: environment variable names, the token volume, limits, and the
              validation of a report (the Trainer's rules, so code that works on one
              server works on the other)
    endpoint  train-controller's endpoint: Service, port, path, audience, CA ConfigMap
    reading   a job's progress as `status` and the plan read it (percentage, ETA, metrics)

Pure and small, so the compiler's start-up can afford it; the client training code imports
(`clients/python/trainforge_progress`) restates the few wire names it needs, since it must not
depend on this project.
"""
