"""CH-benCHmark's three extra tables: region, nation and supplier.

As the benchmark defines them (Cole et al., DBTest 2011): 5 regions; 62 nations whose
keys are the character codes of 0-9, A-Z and a-z, so that a customer's nation is
`ascii(substr(c_state, 1, 1))`; and 10,000 suppliers, where stock row (w, i) is supplied
by supplier `mod(w * i, 10000)`. Rows are generated with numpy from a seed, so two
systems loaded with the same seed hold the same rows.
"""
from __future__ import annotations

import string

import numpy as np

from drivers import TableLoad

SUPPLIERS = 10_000

REGIONS: tuple[tuple[int, str], ...] = ((1, "Africa"), (2, "America"), (3, "Asia"), (4, "Australia"), (5, "Europe"))
_AFRICA, _AMERICA, _ASIA, _AUSTRALIA, _EUROPE = 1, 2, 3, 4, 5

# (name, region) in key order: keys are ord() of 0..9, A..Z, a..z.
_NATIONS: tuple[tuple[str, int], ...] = (
    ("Australia", _AUSTRALIA), ("Belgium", _EUROPE), ("Cameroon", _AFRICA), ("Denmark", _EUROPE),
    ("Ecuador", _AMERICA), ("France", _EUROPE), ("Germany", _EUROPE), ("Hungary", _EUROPE), ("Italy", _EUROPE),
    ("Japan", _ASIA),
    ("Kenya", _AFRICA), ("Lithuania", _EUROPE), ("Mexico", _AMERICA), ("Netherlands", _EUROPE), ("Oman", _AFRICA),
    ("Portugal", _EUROPE), ("Qatar", _AFRICA), ("Rwanda", _AFRICA), ("Serbia", _EUROPE), ("Togo", _AFRICA),
    ("United States", _AMERICA), ("Vietnam", _ASIA), ("Singapore", _ASIA), ("Cambodia", _ASIA), ("Yemen", _AFRICA),
    ("Zimbabwe", _AFRICA), ("Argentina", _AMERICA), ("Bolivia", _AMERICA), ("Canada", _AMERICA),
    ("Dominican Republic", _AMERICA), ("Egypt", _AFRICA), ("Finland", _EUROPE), ("Ghana", _AFRICA),
    ("Haiti", _AMERICA), ("India", _ASIA), ("Jamaica", _AUSTRALIA),
    ("Kazakhstan", _ASIA), ("Luxembourg", _EUROPE), ("Morocco", _AFRICA), ("Norway", _EUROPE), ("Poland", _EUROPE),
    ("Peru", _AMERICA), ("Nicaragua", _AMERICA), ("Romania", _EUROPE), ("South Africa", _AFRICA),
    ("Thailand", _ASIA), ("United Kingdom", _EUROPE), ("Venezuela", _AMERICA), ("Liechtenstein", _EUROPE),
    ("Austria", _EUROPE), ("Laos", _ASIA), ("Zambia", _AFRICA), ("Switzerland", _EUROPE), ("China", _ASIA),
    ("Papua New Guinea", _AUSTRALIA), ("East Timor", _AUSTRALIA), ("Bulgaria", _EUROPE), ("Brazil", _AMERICA),
    ("Albania", _EUROPE), ("Andorra", _EUROPE), ("Belize", _AMERICA), ("Botswana", _AFRICA),
)
NATION_KEYS: tuple[int, ...] = tuple(ord(c) for c in string.digits + string.ascii_uppercase + string.ascii_lowercase)
NATIONS: tuple[tuple[int, str, int], ...] = tuple((key, name, region) for key, (name, region) in zip(NATION_KEYS, _NATIONS))
assert len(NATIONS) == 62 and len(NATION_KEYS) == 62

# Share of suppliers whose comment mentions "bad" (Q16 excludes them), like TPC-H's
# suppliers with customer complaints.
BAD_SHARE = 0.005

CREATE: dict[str, str] = {
    "region": """CREATE TABLE region (
    r_regionkey INTEGER NOT NULL,
    r_name VARCHAR(55),
    r_comment VARCHAR(152),
    PRIMARY KEY (r_regionkey)
)""",
    "nation": """CREATE TABLE nation (
    n_nationkey INTEGER NOT NULL,
    n_name VARCHAR(25),
    n_regionkey INTEGER,
    n_comment VARCHAR(152),
    PRIMARY KEY (n_nationkey)
)""",
    "supplier": """CREATE TABLE supplier (
    su_suppkey INTEGER NOT NULL,
    su_name VARCHAR(25),
    su_address VARCHAR(40),
    su_nationkey INTEGER,
    su_phone VARCHAR(15),
    su_acctbal DECIMAL(12, 2),
    su_comment VARCHAR(101),
    PRIMARY KEY (su_suppkey)
)""",
}
TABLE_NAMES: tuple[str, ...] = tuple(CREATE)

_ALNUM = np.array(list(string.ascii_letters + string.digits))
_WORDS = np.array(list(string.ascii_lowercase + "  "))  # text with spaces, like TPC-H comments


def random_strings(rng: np.random.Generator, n: int, shortest: int, longest: int, alphabet: np.ndarray = _ALNUM) -> np.ndarray:
    """n random strings of lengths in [shortest, longest], vectorised: one draw of a
    character matrix, cut per row. An object array of str (every engine's loader takes it)."""
    lengths = rng.integers(shortest, longest + 1, size=n)
    chars = alphabet[rng.integers(0, len(alphabet), size=(n, longest))]
    rows = chars.view(f"<U{longest}").ravel()
    return np.array([row[:length] for row, length in zip(rows, lengths)], dtype=object)


def _text(values: list[str]) -> np.ndarray:
    return np.array(values, dtype=object)


def region_rows(rng: np.random.Generator) -> list[np.ndarray]:
    keys = np.array([k for k, _ in REGIONS], dtype=np.int32)
    return [keys, _text([name for _, name in REGIONS]), random_strings(rng, len(REGIONS), 31, 115, _WORDS)]


def nation_rows(rng: np.random.Generator) -> list[np.ndarray]:
    return [np.array([k for k, _, _ in NATIONS], dtype=np.int32), _text([name for _, name, _ in NATIONS]),
            np.array([r for _, _, r in NATIONS], dtype=np.int32), random_strings(rng, len(NATIONS), 31, 114, _WORDS)]


def supplier_rows(rng: np.random.Generator, suppliers: int = SUPPLIERS) -> list[np.ndarray]:
    """Supplier keys run 0..suppliers-1: `mod(w * i, 10000)` yields 0, so a supplier
    must hold key 0 for every stock row to have one (names keep TPC-H's Supplier#n)."""
    keys = np.arange(suppliers, dtype=np.int32)
    nation_index = rng.integers(0, len(NATIONS), size=suppliers)
    nations = np.array(NATION_KEYS, dtype=np.int32)[nation_index]
    names = _text([f"Supplier#{k:09d}" for k in keys])
    addresses = random_strings(rng, suppliers, 10, 40)
    # TPC-H's phone format, country code from the nation: CC-AAA-BBB-CCCC.
    digits = rng.integers(100, 1000, size=(suppliers, 2))
    last = rng.integers(1000, 10000, size=suppliers)
    phones = _text([f"{10 + n}-{a}-{b}-{c}" for n, (a, b), c in zip(nation_index, digits, last)])
    balances = np.round(rng.integers(-99_999, 1_000_000, size=suppliers) / 100.0, 2)
    comments = random_strings(rng, suppliers, 25, 100, _WORDS)
    bad = np.flatnonzero(rng.random(suppliers) < BAD_SHARE)
    for row in bad:  # "bad" at a random place in the comment
        text = comments[row]
        at = int(rng.integers(0, len(text) - 3))
        comments[row] = text[:at] + "bad" + text[at + 3:]
    return [keys, names, addresses, nations, phones, balances, comments]


_COLUMNS: dict[str, tuple[str, ...]] = {
    "region": ("r_regionkey", "r_name", "r_comment"),
    "nation": ("n_nationkey", "n_name", "n_regionkey", "n_comment"),
    "supplier": ("su_suppkey", "su_name", "su_address", "su_nationkey", "su_phone", "su_acctbal", "su_comment"),
}


def table_loads(seed: int = 1, suppliers: int = SUPPLIERS) -> list[TableLoad]:
    """The three tables for `System.load`, the same rows for the same seed."""
    rng = np.random.default_rng([seed, 0xC4])
    batches = {"region": region_rows(rng), "nation": nation_rows(rng), "supplier": supplier_rows(rng, suppliers)}
    return [TableLoad(name, CREATE[name], _COLUMNS[name], [batches[name]]) for name in TABLE_NAMES]
