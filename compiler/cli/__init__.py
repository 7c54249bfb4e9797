"""`train-compile`: the click group (main), the GitOps commands (gitops), their shared options and helpers (common), `make demo` (demo) and the quick exit (quickexit)."""
