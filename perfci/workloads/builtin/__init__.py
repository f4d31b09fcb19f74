"""Built-in suites. Each module is a suite; its file stem prefixes the case ids."""
