"""TPC-C's random functions (clause 2.1.6 and 4.3.2): NURand, customer last names, and
the run-time constants C."""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")


def last_name(number: int) -> str:
    """C_LAST for a number in 0..999: the syllables of its three digits (clause 4.3.2.3)."""
    return SYLLABLES[number // 100] + SYLLABLES[number // 10 % 10] + SYLLABLES[number % 10]


LAST_NAMES = np.array([last_name(n) for n in range(1000)])


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    """NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x."""
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


def nurand_array(gen: np.random.Generator, a: int, x: int, y: int, c: int, size: int) -> np.ndarray:
    return ((gen.integers(0, a + 1, size) | gen.integers(x, y + 1, size)) + c) % (y - x + 1) + x


def run_c_last(load_c: int, rng: random.Random) -> int:
    """A run's C for C_LAST: C_delta = |C_run - C_load| in 65..119, not 96 or 112 (clause 2.1.6.1)."""
    while True:
        candidate = rng.randint(0, 255)
        if 65 <= abs(candidate - load_c) <= 119 and abs(candidate - load_c) not in (96, 112):
            return candidate


@dataclass(frozen=True)
class Constants:
    """The C of each NURand use. C_ID's and OL_I_ID's may be the load's; C_LAST's must differ."""

    c_last: int
    c_id: int
    ol_i_id: int

    @staticmethod
    def for_load(rng: random.Random) -> "Constants":
        return Constants(rng.randint(0, 255), rng.randint(0, 1023), rng.randint(0, 8191))

    @staticmethod
    def for_run(load_c_last: int, rng: random.Random) -> "Constants":
        return Constants(run_c_last(load_c_last, rng), rng.randint(0, 1023), rng.randint(0, 8191))
