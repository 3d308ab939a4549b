"""sqlglot dialects tique adds for engines sqlglot does not cover."""
