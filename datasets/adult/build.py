"""Build ``adult.parquet``: the 45,222 complete rows of UCI Adult.

Usage::

    python datasets/adult/build.py [RAW_DIR] [--out PATH]

RAW_DIR holds the raw UCI files ``adult.data`` and ``adult.test``, unmodified, as the UCI Machine Learning
Repository publishes them (https://archive.ics.uci.edu/dataset/2/adult; CC BY 4.0; ``adult.data``'s MD5 is
checked); default: the folder in the environment variable ``SQLANON_ADULT_RAW``. The script

* reads both files as text (15 comma-separated fields, no quoting),
* skips the junk first line of ``adult.test`` (``|1x3 Cross validator``) and
  the blank trailing lines of both files,
* trims surrounding whitespace from every value,
* strips the trailing ``.`` from the ``adult.test`` labels (``<=50K.`` ->
  ``<=50K``),
* drops every row with ``?`` (unknown) in any column,
* casts the six numeric columns to INTEGER (everything else VARCHAR), and
* writes ``adult.parquet`` beside this script with DuckDB's
  ``COPY ... (FORMAT parquet)``, rows in file order: adult.data, then adult.test.

The result has exactly 45,222 rows (30,162 from adult.data, 15,060 from
adult.test); the script fails if it does not.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import warnings
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
RAW_ENV = "SQLANON_ADULT_RAW"        # the folder of the raw files, where no RAW_DIR is given
DEFAULT_OUT = HERE / "adult.parquet"

ADULT_DATA_MD5 = "5d7c39d7b8804f071cdd1f2a7c460872"
EXPECTED_ROWS = 45_222

# (snake_case name, DuckDB type), in the order of the raw files.
COLUMNS: list[tuple[str, str]] = [
    ("age", "INTEGER"),
    ("workclass", "VARCHAR"),
    ("fnlwgt", "INTEGER"),
    ("education", "VARCHAR"),
    ("education_num", "INTEGER"),
    ("marital_status", "VARCHAR"),
    ("occupation", "VARCHAR"),
    ("relationship", "VARCHAR"),
    ("race", "VARCHAR"),
    ("sex", "VARCHAR"),
    ("capital_gain", "INTEGER"),
    ("capital_loss", "INTEGER"),
    ("hours_per_week", "INTEGER"),
    ("native_country", "VARCHAR"),
    ("salary", "VARCHAR"),
]


def md5_of(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _read_raw(con: duckdb.DuckDBPyConnection, path: Path, skip: int, table: str) -> None:
    """Load one raw file as 15 VARCHAR columns, trimmed, into ``table`` (file order kept)."""
    columns = "{" + ", ".join(f"'c{i:02d}': 'VARCHAR'" for i in range(len(COLUMNS))) + "}"
    # preserve_insertion_order (DuckDB's default) keeps the table's rowid in file order.
    con.execute(
        f"""
        CREATE TEMP TABLE {table} AS
        SELECT {", ".join(f"trim(c{i:02d}) AS c{i:02d}" for i in range(len(COLUMNS)))}
        FROM read_csv(?, header = false, skip = {int(skip)}, delim = ',', quote = '',
                      escape = '', auto_detect = false, columns = {columns},
                      null_padding = false, strict_mode = true)
        """,
        [str(path)],
    )


def build_relation_sql() -> str:
    """SQL over the temp tables ``raw_data`` / ``raw_test`` giving the clean, typed rows."""
    casts = []
    for i, (name, typ) in enumerate(COLUMNS):
        expr = f"c{i:02d}"
        if name == "salary":
            expr = f"rtrim({expr}, '.')"
        casts.append(f"CAST({expr} AS {typ}) AS {name}")
    no_unknown = " AND ".join(f"c{i:02d} <> '?'" for i in range(len(COLUMNS)))
    return f"""
        SELECT {", ".join(casts)}
        FROM (
            SELECT 0 AS part, rowid AS pos, * FROM raw_data
            UNION ALL
            SELECT 1 AS part, rowid AS pos, * FROM raw_test
        )
        WHERE {no_unknown}
        ORDER BY part, pos
    """


def build(raw_dir: Path, out: Path = DEFAULT_OUT, *, con: duckdb.DuckDBPyConnection | None = None,
          check_md5: bool = True) -> int:
    """Build the clean Adult table from ``raw_dir`` and write it to ``out``; return its row count.

    When ``con`` is given, the clean rows are also left in that connection as the temp table
    ``adult_clean`` (used by the tests to compare a rebuild with the committed Parquet).
    """
    raw_dir = Path(raw_dir)
    data_path, test_path = raw_dir / "adult.data", raw_dir / "adult.test"
    for p in (data_path, test_path):
        if not p.is_file():
            raise FileNotFoundError(f"raw Adult file not found: {p}")
    if check_md5:
        got = md5_of(data_path)
        if got != ADULT_DATA_MD5:
            warnings.warn(f"{data_path}: MD5 {got} differs from the expected {ADULT_DATA_MD5}",
                          stacklevel=2)
    with open(test_path, encoding="utf-8") as fh:
        first = fh.readline()
    skip_test = 1 if first.startswith("|") else 0

    own = con is None
    con = duckdb.connect() if own else con
    try:
        _read_raw(con, data_path, 0, "raw_data")
        _read_raw(con, test_path, skip_test, "raw_test")
        con.execute(f"CREATE TEMP TABLE adult_clean AS {build_relation_sql()}")
        rows = con.execute("SELECT count(*) FROM adult_clean").fetchone()[0]
        if rows != EXPECTED_ROWS:
            raise RuntimeError(f"expected {EXPECTED_ROWS} complete rows, got {rows}")
        labels = {r[0] for r in con.execute("SELECT DISTINCT salary FROM adult_clean").fetchall()}
        if labels != {"<=50K", ">50K"}:
            raise RuntimeError(f"unexpected salary labels: {sorted(labels)}")
        if out is not None:
            out = Path(out)
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(out.name + ".tmp")
            con.execute(
                f"COPY (SELECT * FROM adult_clean ORDER BY rowid) TO '{_sql_str(tmp)}' "
                "(FORMAT parquet, COMPRESSION zstd)"
            )
            tmp.replace(out)
        return rows
    finally:
        con.execute("DROP TABLE IF EXISTS raw_data")
        con.execute("DROP TABLE IF EXISTS raw_test")
        if own:
            con.close()


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw_dir", nargs="?", type=Path, default=os.environ.get(RAW_ENV),
                        help=f"folder with adult.data and adult.test (default: ${RAW_ENV})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"Parquet file to write (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.raw_dir is None:
        parser.error(f"give RAW_DIR (the folder of adult.data and adult.test) or set {RAW_ENV}")
    try:
        rows = build(Path(args.raw_dir), args.out)
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({rows} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
