"""The test world: real Kubernetes parts started on loopback for tests, benchmarks and `make cluster`.

Why it is a top-level package outside the wheel: the controller ships; the world it is
tested in does not. Everything that starts a process for a test lives here, one module
per part, so tests/ and bench/ share one way to start it (``world.World``) instead of
copies. Nothing that ships imports it (an import-linter contract holds that).

Map: ``world`` (World, the part table), ``part`` (the Part interface, ProcessPart),
``gobuild`` (the table of pinned Go builds and their cache; ``python -m testworld build``),
``controlplane``/``assets``/``certs``/``build-assets.sh`` (etcd + kube-apiserver),
``scheduler``, ``controller_manager`` (garbage collector, namespace controller), ``kwok``
and ``stages`` (nodes and the pod lifecycle), ``pytest_plugin`` (fixtures), ``cli``.
"""
