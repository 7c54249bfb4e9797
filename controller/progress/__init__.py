"""The progress endpoint: training pods report how far they have got, the job's status shows it.

    auth     who sent a report: a TokenReview of its token, the job its pod belongs to
    store    coalesced writes of `status.trainerStatus`, at most one per job per interval
    server   the HTTPS endpoint: the checks in order, the answers the Trainer gives
    certs    the serving certificate and its CA in each job namespace
    service  the parts wired to one Manager's caches

The protocol itself (names, limits, validation) is `foundation.progress`, shared with the
compiler (which points the pods here) and `train-compile status` (which reads the result).
"""
