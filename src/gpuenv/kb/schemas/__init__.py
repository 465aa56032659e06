"""One module per knowledge-base subject, each exporting TABLES: dict[str, TableSpec]."""
