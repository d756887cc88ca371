"""Adapters: the engines that reach real tools. The gate talks to them through `Adapter`."""
