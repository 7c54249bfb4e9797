"""Shared pytest configuration: registers the real control plane fixtures
(``control_plane``, ``namespace``, ``k8s_client``) from testworld."""

pytest_plugins = ["testworld.pytest_plugin"]
