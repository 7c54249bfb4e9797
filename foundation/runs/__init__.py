"""The run's semantics: what train-controller does with a job, which the compiler's plan and status predict.

A run is what a job's pods do from the moment they are created (or a suspended job is resumed)
until the job finishes or is suspended. Three parts of the project reason about runs: the
controller makes them, `train-compile plan` says what a merge will do to them, and
`train-compile status` reports on them. Each rule they share is here once, pure (plain JSON
and times in, words and numbers out), below both products so neither restates it:

    spec      the run spec: what a run is built from, which edits wait for the next run
    started   when a run has started (its first container ran): before it, an edit is taken
    record    the wire names of train-controller's run record (a ControllerRevision) and its pods
    state     a job's state from its conditions (Created ... Failed), and since when
    exits     which exit codes a replica's restartPolicy retries, and which fail the job
    podstate  why a pod waits, read from its status, and since when
    stuck     when a waiting pod is stuck: the reasons, and the threshold (3 minutes)
    clock     times as the API server writes them (RFC 3339), read one way
    record    train-controller's run record (a ControllerRevision): the names it writes
    current   a job's current run from the cluster: its pods, when it began and started, its record

The kinds' own facts (replica-spec field, defaulting, status rules) stay in their adapters
(`foundation.frameworks`); these modules take an adapter where a rule depends on the kind.
"""
