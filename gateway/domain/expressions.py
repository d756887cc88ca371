"""CEL expressions over a call's arguments, compiled once at load.

An expression that does not compile stops loading. An expression that fails to evaluate (a
missing field, a type mismatch) or yields something other than a boolean is an error the
caller must treat as a refusal: fail closed.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


class ExpressionError(Exception):
    """Evaluation failed; the caller refuses."""


class Expression:
    __slots__ = ("_program", "source")

    def __init__(self, source: str) -> None:
        """Raises:
        ValueError: the expression does not parse or compile.
        """
        if not isinstance(source, str) or not source.strip():
            raise ValueError("an expression must be a non-empty CEL string")
        # Imported at the first compile: the package also loads its interactive shell (prompt_toolkit,
        # ~0.2 s), which commands that never evaluate an expression should not pay for.
        import cel

        try:
            self._program = cel.compile(source)
        except Exception as exc:  # the binding raises ValueError with a caret diagram
            raise ValueError(f"CEL expression does not compile: {source!r}: {str(exc).splitlines()[0]}") from exc
        self.source = source

    def evaluate(self, args: Any) -> bool:
        """Raises:
        ExpressionError: evaluation failed or did not produce a boolean.
        """
        try:
            result = self._program.execute({"args": args})
        except Exception as exc:
            raise ExpressionError(f"{self.source!r} could not be evaluated: {type(exc).__name__}") from exc
        if not isinstance(result, bool):
            raise ExpressionError(f"{self.source!r} yielded {type(result).__name__}, not a boolean")
        return result

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


@lru_cache(maxsize=1024)
def compiled(source: str) -> Expression:
    """The compiled expression for `source`, compiled once per process."""
    return Expression(source)
