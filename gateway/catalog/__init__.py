"""The tool catalog (every adapter's tools under their exposed names, with policy) and pins."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.catalog.catalog import Catalog, PinBook, PinState, ToolSpec
    from gateway.catalog.pins import Pins, definition_json
else:
    from gateway.faces import lazy as _lazy

    __getattr__, __dir__ = _lazy(__name__)

__all__ = [
    "Catalog",
    "PinBook",
    "PinState",
    "Pins",
    "ToolSpec",
    "definition_json",
]
