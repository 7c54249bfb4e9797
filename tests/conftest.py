"""Shared pytest configuration: registers the real control plane fixtures
(``control_plane``, ``namespace``, ``k8s_client``) from controller.envtest."""

pytest_plugins = ["controller.envtest.pytest_plugin"]
