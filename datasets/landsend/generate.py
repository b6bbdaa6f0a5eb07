"""Seeded generator of a synthetic Lands End point-of-sale table (docs/DESIGN.md section 6).

The Lands End data of the l-diversity paper (TKDD 2007, Figure 8: 4,591,581 rows) is not public.
This builds a table with its schema and domain sizes, with skewed (Zipf-like) value frequencies,
entirely inside DuckDB (the SQL is in ``generate.sql`` beside this file)::

    python datasets/landsend/generate.py OUT.parquet [--rows N] [--seed S]
                                         [--hierarchies DIR] [--policy FILE.yaml]

writes the table to ``OUT.parquet``, one hierarchy CSV per quasi-identifier into ``DIR``
(default: ``hierarchies/`` beside the Parquet file) and example policies (default:
``landsend_k6.yaml`` and ``landsend_entropy6.yaml`` beside the Parquet file).

From Python::

    import duckdb
    from sqlanon.datasets.landsend.generate import generate
    con = duckdb.connect()
    generate(con, "landsend", rows=20_000, seed=1)

The same (rows, seed) always gives the same table, in the same row order. See README.md for the
schema choices.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import string
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
SQL_FILE = HERE / "generate.sql"

DEFAULT_ROWS = 4_591_581
DEFAULT_SEED = 0

# Figure 8: attribute -> domain size
DOMAIN = {"zipcode": 31_953, "order_date": 320, "gender": 2, "style": 1_509, "price": 346,
          "quantity": 1, "shipment": 2, "cost": 147}
# Zipf-like exponent of each drawn column (P(rank r) ~ r^-s); cost is derived from price
EXPONENT = {"zipcode": 0.6, "order_date": 0.5, "gender": 1.0, "style": 0.8, "price": 0.8,
            "shipment": 2.0}
# Quasi-identifiers in the paper's order, with the height of their hierarchy; cost is sensitive
QI_HEIGHTS = {"zipcode": 5, "order_date": 3, "gender": 1, "style": 1, "price": 4, "quantity": 1,
              "shipment": 1}
SENSITIVE = "cost"
COLUMNS = [("zipcode", "VARCHAR"), ("order_date", "DATE"), ("gender", "VARCHAR"), ("style", "INTEGER"),
           ("price", "INTEGER"), ("quantity", "INTEGER"), ("shipment", "VARCHAR"), ("cost", "INTEGER")]

_KEY_NAMES = ["zipcode_rank", "zipcode_pick", "order_date_rank", "style_rank", "style_pick", "price_rank",
              "price_pick", "price_pick2"] + [f"{c}_{i}" for c in (*EXPONENT, "cost") for i in (1, 2)]


def _sections() -> dict[str, str]:
    text = SQL_FILE.read_text(encoding="utf-8")
    parts = re.split(r"^-- name: (\w+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts), 2)}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _key(seed: int, name: str) -> int:
    """A 32-bit key for one use of randomness, derived from the seed."""
    return int.from_bytes(hashlib.sha256(f"sqlanon-landsend:{seed}:{name}".encode()).digest()[:4], "big")


def _params(rows: int, seed: int, table: str) -> dict[str, str]:
    p = {"rows": str(int(rows)), "table": _ident(table)}
    p.update({f"d_{c}": str(d) for c, d in DOMAIN.items()})
    p.update({f"s_{c}": repr(float(s)) for c, s in EXPONENT.items()})
    p.update({f"k_{n}": str(_key(seed, n)) for n in _KEY_NAMES})
    return p


def _statements(sql: str) -> list[str]:
    """Split a section into statements on ';' at line ends (the SQL has no ';' inside strings)."""
    return [s.strip() for s in re.split(r";\s*$", sql, flags=re.M) if s.strip() and not _only_comments(s)]


def _only_comments(s: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in s.splitlines())


def generate(con: duckdb.DuckDBPyConnection, table: str = "landsend", rows: int = DEFAULT_ROWS,
             seed: int = DEFAULT_SEED) -> None:
    """Create ``table`` (it must not exist yet) in ``con`` with ``rows`` synthetic rows for ``seed``.

    Columns: zipcode VARCHAR(5 digits), order_date DATE, gender VARCHAR, style INTEGER,
    price INTEGER (cents), quantity INTEGER, shipment VARCHAR, cost INTEGER (cents, a multiple
    of 100: the sensitive attribute's 147 buckets). With at least 10 rows per domain value of a
    column (every column at the default 4,591,581 rows), every value of its domain occurs.
    """
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        raise ValueError(f"rows must be a positive integer; got {rows!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    sections = _sections()
    params = _params(rows, seed, table)
    try:
        for name in ("macros", "domains", "table"):
            for stmt in _statements(string.Template(sections[name]).substitute(params)):
                con.execute(stmt)
    finally:
        for stmt in _statements(sections["cleanup"]):
            con.execute(stmt)


def hierarchy_rows_sql(table: str, column: str) -> str:
    """The SELECT giving the hierarchy rows (header = its column names) of one quasi-identifier."""
    sections = _sections()
    name = f"hierarchy_{column}" if f"hierarchy_{column}" in sections else "hierarchy_suppress"
    return string.Template(sections[name]).substitute(table=_ident(table), column=_ident(column)).rstrip(";")


def write_hierarchies(con: duckdb.DuckDBPyConnection, table: str, folder: Path) -> dict[str, Path]:
    """Write one CSV per quasi-identifier (rows = the distinct values present in ``table``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for column in QI_HEIGHTS:
        path = folder / f"{column}.csv"
        tmp = path.with_name(path.name + ".tmp")
        con.execute(f"COPY ({hierarchy_rows_sql(table, column)}) TO '{_sql_str(tmp)}' "
                    "(FORMAT csv, HEADER true, DELIMITER ',', QUOTE '\"')")
        tmp.replace(path)
        out[column] = path
    return out


def policy_text(parquet: str, hierarchies: str, privacy: str, release: str) -> str:
    """A policy over the generated table; paths relative to the policy file's folder."""
    qis = "\n".join(f"  {c + ':':<12}{{hierarchy: {hierarchies}/{c}.csv}}" for c in QI_HEIGHTS)
    return (f"# Synthetic Lands End (datasets/landsend/generate.py): the 7 quasi-identifiers of the TKDD\n"
            f"# l-diversity paper's Figure 8 in order, cost (147 buckets) sensitive.\n"
            f"source: {{parquet: {parquet}, table: landsend}}\n"
            f"quasi_identifiers:\n{qis}\n"
            f"sensitive: [{SENSITIVE}]\n"
            f"privacy: {privacy}\n"
            f"utility: discernibility\n"
            f"release: {{name: {release}, materialize: table}}\n")


def write_policies(policy: Path, parquet: Path, hierarchies: Path) -> list[Path]:
    """Write ``policy`` (k = 6) and, beside it, the entropy 6-diverse variant (Figure 14's settings)."""
    policy = Path(policy)
    base = policy.resolve().parent
    rel_parquet = Path(os.path.relpath(Path(parquet).resolve(), base)).as_posix()
    rel_h = Path(os.path.relpath(Path(hierarchies).resolve(), base)).as_posix()
    entropy = policy.with_name(policy.stem.replace("_k6", "") + "_entropy6.yaml")
    written = []
    for path, privacy, release in (
            (policy, "{k: 6, max_suppression: 0.0}", "landsend_release"),
            (entropy, "{k: 6, l_diversity: {variant: entropy, l: 6}, max_suppression: 0.0}", "landsend_release")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(policy_text(rel_parquet, rel_h, privacy, release), encoding="utf-8")
        written.append(path)
    return written


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")


def write_parquet(out: Path, rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED,
                  hierarchies: Path | None = None, policy: Path | None = None) -> dict:
    """Generate the table and write the Parquet file, the hierarchies and the policies."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    hierarchies = Path(hierarchies) if hierarchies else out.parent / "hierarchies"
    policy = Path(policy) if policy else out.parent / "landsend_k6.yaml"
    t0 = time.perf_counter()
    con = duckdb.connect()
    try:
        generate(con, "landsend", rows, seed)
        t1 = time.perf_counter()
        tmp = out.with_name(out.name + ".tmp")
        con.execute(f"COPY (SELECT * FROM landsend) TO '{_sql_str(tmp)}' (FORMAT parquet, COMPRESSION zstd)")
        tmp.replace(out)
        t2 = time.perf_counter()
        paths = write_hierarchies(con, "landsend", hierarchies)
        policies = write_policies(policy, out, hierarchies)
        distinct = dict(zip([c for c, _ in COLUMNS], con.execute(
            "SELECT " + ", ".join(f"count(DISTINCT {c})" for c, _ in COLUMNS) + " FROM landsend").fetchone()))
    finally:
        con.close()
    return {"rows": rows, "seed": seed, "parquet": out, "hierarchies": paths, "policies": policies,
            "distinct": distinct, "generate_s": t1 - t0, "write_s": t2 - t1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the synthetic Lands End table as Parquet.")
    parser.add_argument("out", type=Path, help="Parquet file to write")
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help=f"row count (default {DEFAULT_ROWS:,})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    parser.add_argument("--hierarchies", type=Path, default=None,
                        help="folder for the hierarchy CSVs (default: hierarchies/ beside the Parquet file)")
    parser.add_argument("--policy", type=Path, default=None,
                        help="policy YAML to write (default: landsend_k6.yaml beside the Parquet file)")
    args = parser.parse_args(argv)
    if args.rows < 1:
        print("error: --rows must be a positive integer", file=sys.stderr)
        return 2
    info = write_parquet(args.out, args.rows, args.seed, args.hierarchies, args.policy)
    print(f"wrote {info['parquet']} ({info['rows']:,} rows, seed {info['seed']}; "
          f"generated in {info['generate_s']:.1f} s, written in {info['write_s']:.1f} s)")
    print("distinct values: " + ", ".join(f"{c} {n:,}" for c, n in info["distinct"].items()))
    print(f"hierarchies in {Path(next(iter(info['hierarchies'].values()))).parent}; "
          f"policies {', '.join(str(p) for p in info['policies'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
