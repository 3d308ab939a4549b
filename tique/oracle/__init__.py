"""Timestamp oracles: transaction ids, start and commit timestamps, snapshot advance."""
from tique.oracle.base import Oracle

__all__ = ["Oracle"]
