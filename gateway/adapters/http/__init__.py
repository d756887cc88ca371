"""`kind: http` adapters: the adapter, its configuration, the mapping of arguments to requests,
outcomes, the OpenAPI importer."""
