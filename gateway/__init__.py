"""Warrant: a tool gateway for long-running AI agents. No action without a warrant."""

__version__ = "0.1.0"
