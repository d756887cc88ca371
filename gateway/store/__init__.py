"""The store: the authoritative record of every run. One interface, chosen by URL in `open_store`."""
