"""The overlay tests' builders live in `overlay_kit.py` beside this file; their snapshots
are real YAML under tests/__snapshots__/ (the `yaml_snapshot` fixture of tests/conftest.py)."""

