"""The tool catalog (every adapter's tools under their exposed names, with policy) and pins."""
