"""Demo destination services that a gateway HTTP adapter fronts: a CRM and a mail sender."""
