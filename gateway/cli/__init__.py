"""The `warrant` command: one module per command group (main.py builds the parser)."""

from gateway.cli.main import main, parser

__all__ = ["main", "parser"]
