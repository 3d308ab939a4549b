"""TPC-C: schema, loader, the five transactions, runs and the consistency check."""
