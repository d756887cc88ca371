"""The PostgreSQL back end."""
