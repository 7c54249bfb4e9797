"""Emitting: the kustomize tree (tree), one YAML stream (render), the Namespaces (namespaces), the YAML writer (serialize, fastemit), and diagnostics as text, JSON or SARIF (reporting, sarif)."""
