"""Write the Adult generalization hierarchies (``hierarchies/*.csv``) and check them against the data.

Usage::

    python datasets/adult/make_hierarchies.py

The taxonomies below are the source of truth for the CSV files; README.md explains each choice.
CSV format (what ``sqlanon.hierarchy.load_taxonomy_csv`` reads): a header row, then one row per
distinct data value; column 0 = the value exactly as it appears in ``adult.parquet``, one column per
generalization level, the last column ``*`` (the root). Height = number of columns - 1. Rows are in a
meaningful order (numeric / educational order, groups contiguous), because the engine numbers labels
in order of first appearance.

After writing, the script checks with DuckDB that every hierarchy covers exactly the distinct
values of its column in ``adult.parquet`` and that its levels nest (a tree).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
PARQUET = HERE / "adult.parquet"
OUT_DIR = HERE / "hierarchies"
ROOT = "*"

# ---------------------------------------------------------------------------------------------
# Taxonomy trees: {level-1 group: [values]} (height 2) or nested (height 3). Order matters.
# ---------------------------------------------------------------------------------------------

MARITAL_STATUS = {  # height 2: value -> group -> *
    "Married": ["Married-civ-spouse", "Married-AF-spouse", "Married-spouse-absent"],
    "Previously-married": ["Separated", "Divorced", "Widowed"],
    "Never-married": ["Never-married"],
}

EDUCATION = {  # height 3: value -> school stage -> attainment (US Census bands) -> *
    "Less-than-HS": {
        "Primary-school": ["Preschool", "1st-4th", "5th-6th"],
        "Middle-school": ["7th-8th"],
        "High-school-no-diploma": ["9th", "10th", "11th", "12th"],
    },
    "HS-or-some-college": {
        "HS-grad": ["HS-grad"],
        "Some-college-or-Assoc": ["Some-college", "Assoc-voc", "Assoc-acdm"],
    },
    "Bachelors-or-higher": {
        "Bachelors": ["Bachelors"],
        "Graduate": ["Masters", "Prof-school", "Doctorate"],
    },
}

NATIVE_COUNTRY = {  # height 2: country -> region -> *
    "North-America": ["United-States", "Canada", "Outlying-US(Guam-USVI-etc)"],
    "Central-America-Caribbean": [
        "Mexico", "El-Salvador", "Guatemala", "Honduras", "Nicaragua",
        "Puerto-Rico", "Cuba", "Dominican-Republic", "Haiti", "Jamaica", "Trinadad&Tobago",
    ],
    "South-America": ["Columbia", "Ecuador", "Peru"],
    "Europe": [
        "England", "Scotland", "Ireland", "France", "Germany", "Holand-Netherlands",
        "Italy", "Portugal", "Greece", "Poland", "Hungary", "Yugoslavia",
    ],
    "Asia": [
        "China", "Hong", "Taiwan", "Japan", "South",
        "Philippines", "Vietnam", "Cambodia", "Laos", "Thailand",
        "India", "Iran",
    ],
}

WORKCLASS = {  # height 2: class of worker -> sector -> *
    "Private": ["Private"],
    "Self-employed": ["Self-emp-not-inc", "Self-emp-inc"],
    "Government": ["Federal-gov", "State-gov", "Local-gov"],
    "Unpaid": ["Without-pay"],
}

OCCUPATION = {  # height 2: occupation -> semantic group -> * (sensitive; hierarchical EMD)
    "White-collar": ["Exec-managerial", "Prof-specialty", "Tech-support", "Adm-clerical", "Sales"],
    "Blue-collar": ["Craft-repair", "Machine-op-inspct", "Handlers-cleaners", "Transport-moving",
                    "Farming-fishing"],
    "Service": ["Other-service", "Priv-house-serv", "Protective-serv", "Armed-Forces"],
}

SUPPRESSED = {  # height 1: value -> *
    "sex": ["Male", "Female"],
    "race": ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"],
    "salary": ["<=50K", ">50K"],
}

AGE_RANGE = range(17, 91)          # the 74 ages present in the data
AGE_WIDTHS = (5, 10, 20)           # intervals aligned at multiples of the width from 0

# Expected (distinct values, height) per attribute; docs/DESIGN.md section 6.
EXPECTED = {
    "age": (74, 4), "sex": (2, 1), "race": (5, 1), "marital_status": (7, 2), "education": (16, 3),
    "native_country": (41, 2), "workclass": (7, 2), "salary": (2, 1), "occupation": (14, 2),
}


def _flatten(tree: dict, path: tuple[str, ...] = ()) -> list[list[str]]:
    """Rows [value, level 1, ..., level H-1] from a nested {group: subtree | [values]} tree."""
    rows = []
    for group, sub in tree.items():
        if isinstance(sub, dict):
            rows.extend(_flatten(sub, (group,) + path))
        else:
            rows.extend([v, group, *path] for v in sub)
    return rows


def interval_label(x: int, width: int) -> str:
    lo = (x // width) * width
    return f"[{lo}, {lo + width})"


def tables() -> dict[str, list[list[str]]]:
    """Every hierarchy as a list of rows (without header), root column included."""
    out: dict[str, list[list[str]]] = {}
    out["age"] = [[str(a), *(interval_label(a, w) for w in AGE_WIDTHS), ROOT] for a in AGE_RANGE]
    for name, tree in (("marital_status", MARITAL_STATUS), ("education", EDUCATION),
                       ("native_country", NATIVE_COUNTRY), ("workclass", WORKCLASS),
                       ("occupation", OCCUPATION)):
        out[name] = [row + [ROOT] for row in _flatten(tree)]
    for name, values in SUPPRESSED.items():
        out[name] = [[v, ROOT] for v in values]
    return out


def header(name: str, height: int) -> list[str]:
    return [name] + [f"level_{j}" for j in range(1, height + 1)]


def write(out_dir: Path = OUT_DIR) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, rows in tables().items():
        path = out_dir / f"{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(header(name, len(rows[0]) - 1))
            w.writerows(rows)
        paths[name] = path
    return paths


def check(paths: dict[str, Path], parquet: Path = PARQUET) -> list[str]:
    """Problems found (empty when all is well): coverage against the data, heights, nesting."""
    problems = []
    con = duckdb.connect()
    con.execute("CREATE TEMP TABLE adult AS SELECT * FROM read_parquet(?)", [str(parquet)])
    for name, path in paths.items():
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))[1:]
        height = len(rows[0]) - 1
        want_n, want_h = EXPECTED[name]
        if height != want_h:
            problems.append(f"{name}: height {height}, expected {want_h}")
        values = [r[0] for r in rows]
        if len(set(values)) != len(values):
            problems.append(f"{name}: duplicate base values")
        data = {r[0] for r in con.execute(
            f'SELECT DISTINCT CAST("{name}" AS VARCHAR) FROM adult').fetchall()}
        if len(data) != want_n:
            problems.append(f"{name}: {len(data)} distinct values in the data, expected {want_n}")
        if set(values) != data:
            problems.append(f"{name}: missing {sorted(data - set(values))}, extra {sorted(set(values) - data)}")
        if any(r[-1] != ROOT for r in rows):
            problems.append(f"{name}: last column is not '*' everywhere")
        for j in range(height):
            parent: dict[str, str] = {}
            for r in rows:
                if parent.setdefault(r[j], r[j + 1]) != r[j + 1]:
                    problems.append(f"{name}: level-{j} label {r[j]!r} has two parents")
    con.close()
    return problems


def main() -> int:
    paths = write()
    problems = check(paths)
    for p in problems:
        print("problem:", p, file=sys.stderr)
    if problems:
        return 1
    for name, path in paths.items():
        print(f"wrote {path.relative_to(HERE)} ({EXPECTED[name][0]} values, height {EXPECTED[name][1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
