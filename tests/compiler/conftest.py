"""The compiler tests' builders live beside this file (`compiler_builders`,
`pod_template_cases`); snapshots use the `yaml_snapshot` fixture of tests/conftest.py."""
