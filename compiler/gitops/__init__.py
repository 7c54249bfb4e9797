"""GitOps integrations: what Argo CD and Flux need to run trainforge output well.

`health` holds the job health rule as Argo CD Lua and Flux CEL, `argocd` and `flux`
generate the objects a user would otherwise write by hand (Applications, the Config
Management Plugin, Flux Kustomizations). The sync waves that order a job's prerequisites
before it are an overlay step (`overlays.waves`): they are written into the objects.
Nothing here is imported by `train-compile --help`; `compiler.cli.gitops` imports these
modules inside its commands.
"""
