"""Generators of the install manifests (CRDs, admission policies): `python -m controller.generators.crds`."""
