"""Policy: which tools exist, what they cost, which need approval. Loaded once, decided purely."""
