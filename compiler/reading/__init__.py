"""Reading: source files to documents with positions (sources), environment targets (resolve), and pydantic errors as positioned diagnostics (validation)."""
