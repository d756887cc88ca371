"""The transactions both back ends share."""
