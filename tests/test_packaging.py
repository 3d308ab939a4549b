"""`pip install tique` is the driver alone (sqlglot, duckdb): it imports nothing of the
packages beside it (bench/, drivers/, elle/), its command line works without their
dependencies and says which extra to install for what is missing, and the parts' commands
are found through one registry (tique/cli.py, PARTS)."""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import tique.cli
from tique.cli import PARTS, Part, main

ROOT = Path(__file__).resolve().parents[1]
SIBLINGS = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name != "tique")
# What the extras install, none of which the driver may need.
EXTRA_MODULES = ["rich", "numpy", "matplotlib", "edn_format", "nbformat", "nbclient", "ipykernel", "psycopg", "pymonetdb"]


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_tique_module_names_a_sibling_package() -> None:
    assert {"bench", "drivers", "elle"} <= set(SIBLINGS)
    offending = {str(p.relative_to(ROOT)): sorted(_imported_roots(p) & set(SIBLINGS)) for p in (ROOT / "tique").rglob("*.py")}
    assert {path: found for path, found in offending.items() if found} == {}


def _run_blocked(blocked: list[str], body: str) -> subprocess.CompletedProcess[str]:
    """Runs `body` in a fresh interpreter in which importing any of `blocked` fails as if
    it were not installed."""
    script = textwrap.dedent(f"""
        import sys
        BLOCKED = {blocked!r}

        class NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, NotInstalled())
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_every_tique_module_imports_without_the_sibling_packages() -> None:
    done = _run_blocked(SIBLINGS, f"""
        import pkgutil
        import tique
        names = [m.name for m in pkgutil.walk_packages(tique.__path__, "tique.")]
        for name in names:
            __import__(name)
        leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        print(len(names), "modules;", "leaked:", leaked)
        assert not leaked
    """)
    assert done.returncode == 0, done.stderr
    assert "leaked: []" in done.stdout


def test_the_driver_alone_connects_runs_its_commands_and_names_the_extras() -> None:
    done = _run_blocked(SIBLINGS + EXTRA_MODULES, """
        import contextlib, io, tempfile
        import tique
        from tique.cli import main

        conn = tique.connect(f"duckdb:///{tempfile.mkdtemp()}/t.db", autocommit=True)
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        cur.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
        cur.execute("SELECT count(*) FROM t")
        print("duckdb rows:", cur.fetchone()[0])
        conn.close()

        for url in ("postgresql://u@127.0.0.1:1/db", "monetdb://u:p@127.0.0.1:1/db"):
            try:
                tique.connect(url)
            except tique.InterfaceError as error:
                print("connect:", error)

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(["--help"])
            except SystemExit as exited:
                print("help exit:", exited.code, file=sys.stderr)
            print("bench keys:", main(["bench", "keys", "--seconds", "1"]), file=sys.stderr)
            print("elle check:", main(["elle", "check", "h.edn", "--model", "serializable"]), file=sys.stderr)
        print(out.getvalue())
        print(err.getvalue())
        print("loaded:", sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED))
    """)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert "duckdb rows: 2" in out
    assert "connect: connecting to PostgreSQL needs its client library psycopg, which is not installed: pip install 'tique[postgres]'" in out
    assert "pip install 'tique[monetdb]'" in out
    assert "help exit: 0" in out and "bench" in out and "elle" in out and "checkpoint" in out
    assert "bench keys: 2" in out and "elle check: 2" in out
    assert "tique bench: needs " in out and "pip install 'tique[bench]'" in out
    assert "loaded: []" in out


def test_a_part_is_one_line_of_the_registry(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """How a part (e.g. fuzz/cli.py) adds its command: a `register(subparsers)` function
    and a Part line; a part whose dependencies are missing names its extra."""
    module = types.ModuleType("tq_test_part")

    def register(sub: object) -> None:
        parser = sub.add_parser("probe", help="a part's command")  # type: ignore[attr-defined]
        parser.add_argument("--times", type=int, default=1)
        parser.set_defaults(func=lambda args: print("probed" * args.times) or 0)

    module.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tq_test_part", module)
    monkeypatch.setattr(tique.cli, "PARTS", PARTS + (Part("tq_test_part", {"probe": "a part's command"}, "bench"),
                                                     Part("tq_absent_part.cli", {"absent": "not here"}, "absentextra")))
    assert main(["probe", "--times", "2"]) == 0
    assert "probedprobed" in capsys.readouterr().out
    assert main(["absent", "--anything"]) == 2
    assert "tique absent: needs tq_absent_part, which is not installed; pip install 'tique[absentextra]'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "probe" in capsys.readouterr().out


def test_pyproject_keeps_the_driver_light_and_packs_every_part() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    required = {d.split(">")[0].split("<")[0].split("[")[0].strip() for d in project["project"]["dependencies"]}
    assert required == {"sqlglot", "duckdb"}
    extras = project["project"]["optional-dependencies"]
    assert {"postgres", "monetdb", "bench", "test", "all"} <= set(extras)
    assert any(d.startswith("psycopg") for d in extras["postgres"])
    assert any(d.startswith("pymonetdb") for d in extras["monetdb"])
    packed = set(project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])
    assert {p.module.split(".")[0] for p in PARTS} <= packed
    assert {p.extra for p in PARTS} <= set(extras)
