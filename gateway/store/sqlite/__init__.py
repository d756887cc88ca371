"""The SQLite back end."""
