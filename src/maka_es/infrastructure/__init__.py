"""Everything that touches SQLite, PostgreSQL, files or the process environment."""
