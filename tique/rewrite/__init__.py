"""Pure functions over sqlglot ASTs: parameter handling, snapshot subqueries, read and
write rewriting, and physical DDL. Nothing here talks to a database."""
