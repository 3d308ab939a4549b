"""tique's differential fuzzer: random schemas, data and statements (sqlglot trees), run
natively and through tique on the same engine, results compared; wrong results shrunk to a
small runnable reproduction. `tique fuzz --minutes N` runs it; tests/test_fuzz.py runs a
fixed-seed slice of it in the default suite."""
