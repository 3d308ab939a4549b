"""Benchmarks: tique against the native engines, side by side in one run, printed as ratios."""
