"""The shipped datasets: Adult (parquet, hierarchies, policies), the hospital toy table, Lands End.

Plain DuckDB queries against the committed files; nothing here uses the sqlanon engine, so a bug
in the engine cannot hide a bug in the data (and the other way round).
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

import duckdb
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO / "datasets"
ADULT = DATASETS / "adult"
PARQUET = ADULT / "adult.parquet"
HOSPITAL = DATASETS / "hospital"
# the raw UCI files, where the machine has them (.ci/run sets the variable): datasets/adult/build.py's input
RAW_CANDIDATES = [Path(os.environ["SQLANON_ADULT_RAW"])] if os.environ.get("SQLANON_ADULT_RAW") else []


def _load_module(path: Path, name: str):
    """Import a dataset script by path (``datasets`` may clash with an installed package name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute(f"CREATE VIEW adult AS SELECT * FROM read_parquet('{_sql_path(PARQUET)}')")
    yield c
    c.close()


def _read_hierarchy(con, path: Path) -> tuple[str, list[str]]:
    """Load a hierarchy CSV as a temp table of VARCHAR columns; return (table name, column names)."""
    table = "h_" + path.stem
    con.execute(f"""CREATE OR REPLACE TEMP TABLE "{table}" AS
                    SELECT * FROM read_csv('{_sql_path(path)}', header = true, all_varchar = true,
                                           delim = ',', quote = '"', auto_detect = false,
                                           columns = {_csv_columns(path)})""")
    cols = [r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall()]
    return table, cols


def _csv_columns(path: Path) -> str:
    with open(path, encoding="utf-8") as fh:
        names = fh.readline().rstrip("\n").split(",")
    return "{" + ", ".join(f"'{n}': 'VARCHAR'" for n in names) + "}"


# --------------------------------------------------------------------------------------------
# Adult: the table
# --------------------------------------------------------------------------------------------

ADULT_COLUMNS = [
    ("age", "INTEGER"), ("workclass", "VARCHAR"), ("fnlwgt", "INTEGER"), ("education", "VARCHAR"),
    ("education_num", "INTEGER"), ("marital_status", "VARCHAR"), ("occupation", "VARCHAR"),
    ("relationship", "VARCHAR"), ("race", "VARCHAR"), ("sex", "VARCHAR"), ("capital_gain", "INTEGER"),
    ("capital_loss", "INTEGER"), ("hours_per_week", "INTEGER"), ("native_country", "VARCHAR"),
    ("salary", "VARCHAR"),
]


def test_adult_row_count(con):
    assert con.execute("SELECT count(*) FROM adult").fetchone()[0] == 45_222


def test_adult_schema(con):
    assert [(r[0], r[1]) for r in con.execute("DESCRIBE adult").fetchall()] == ADULT_COLUMNS


def test_adult_no_unknowns_nulls_or_padding(con):
    text_cols = [c for c, t in ADULT_COLUMNS if t == "VARCHAR"]
    cond = " OR ".join(f"{c} IS NULL OR {c} = '?' OR {c} <> trim({c}) OR {c} = ''" for c in text_cols)
    num = " OR ".join(f"{c} IS NULL" for c, t in ADULT_COLUMNS if t == "INTEGER")
    assert con.execute(f"SELECT count(*) FROM adult WHERE {cond} OR {num}").fetchone()[0] == 0


def test_adult_salary_labels(con):
    rows = con.execute("SELECT salary, count(*) FROM adult GROUP BY 1 ORDER BY 1").fetchall()
    assert rows == [("<=50K", 34_014), (">50K", 11_208)]


DISTINCT = {"age": 74, "sex": 2, "race": 5, "marital_status": 7, "education": 16,
            "native_country": 41, "workclass": 7, "salary": 2, "occupation": 14}


@pytest.mark.parametrize("column,expected", sorted(DISTINCT.items()))
def test_adult_distinct_counts(con, column, expected):
    assert con.execute(f'SELECT count(DISTINCT "{column}") FROM adult').fetchone()[0] == expected


def test_adult_age_range(con):
    assert con.execute("SELECT min(age), max(age), count(DISTINCT age) FROM adult").fetchone() == (17, 90, 74)


def test_adult_education_num_matches_education(con):
    # education_num is a 1..16 code of education: one code per label, one label per code
    rows = con.execute("""SELECT count(DISTINCT education_num), count(DISTINCT (education, education_num)),
                                 min(education_num), max(education_num) FROM adult""").fetchone()
    assert rows == (16, 16, 1, 16)


# --------------------------------------------------------------------------------------------
# Adult: hierarchies
# --------------------------------------------------------------------------------------------

# attribute -> number of distinct labels at each level 0..height (so height = len - 1)
LEVEL_SIZES = {
    "age": [74, 16, 9, 5, 1],
    "sex": [2, 1],
    "race": [5, 1],
    "marital_status": [7, 3, 1],
    "education": [16, 7, 3, 1],
    "native_country": [41, 5, 1],
    "workclass": [7, 4, 1],
    "occupation": [14, 3, 1],
    "salary": [2, 1],
}
HEIGHTS = {"age": 4, "sex": 1, "race": 1, "marital_status": 2, "education": 3, "native_country": 2,
           "workclass": 2, "occupation": 2, "salary": 1}


def test_every_hierarchy_file_is_listed():
    assert sorted(p.stem for p in (ADULT / "hierarchies").glob("*.csv")) == sorted(HEIGHTS)


@pytest.mark.parametrize("attribute,height", sorted(HEIGHTS.items()))
def test_hierarchy_height_and_root(con, attribute, height):
    table, cols = _read_hierarchy(con, ADULT / "hierarchies" / f"{attribute}.csv")
    assert len(cols) - 1 == height
    assert cols[0] == attribute
    top = cols[-1]
    assert con.execute(f'SELECT DISTINCT "{top}" FROM "{table}"').fetchall() == [("*",)]


@pytest.mark.parametrize("attribute", sorted(HEIGHTS))
def test_hierarchy_covers_each_data_value_exactly_once(con, attribute):
    table, cols = _read_hierarchy(con, ADULT / "hierarchies" / f"{attribute}.csv")
    base = cols[0]
    rows, distinct = con.execute(f'SELECT count(*), count(DISTINCT "{base}") FROM "{table}"').fetchone()
    assert rows == distinct == DISTINCT[attribute]
    missing = con.execute(f"""SELECT DISTINCT CAST("{attribute}" AS VARCHAR) FROM adult
                              EXCEPT SELECT "{base}" FROM "{table}" """).fetchall()
    extra = con.execute(f"""SELECT "{base}" FROM "{table}"
                            EXCEPT SELECT DISTINCT CAST("{attribute}" AS VARCHAR) FROM adult""").fetchall()
    assert missing == [] and extra == []


@pytest.mark.parametrize("attribute", sorted(HEIGHTS))
def test_hierarchy_levels_nest(con, attribute):
    table, cols = _read_hierarchy(con, ADULT / "hierarchies" / f"{attribute}.csv")
    for lower, upper in zip(cols, cols[1:]):
        worst = con.execute(f"""SELECT max(n) FROM (SELECT count(DISTINCT "{upper}") AS n
                                FROM "{table}" GROUP BY "{lower}")""").fetchone()[0]
        assert worst == 1, f"{attribute}: a {lower} label has several {upper} labels"
    # and no empty labels anywhere
    empty = " OR ".join(f"""coalesce(trim("{c}"), '') = ''""" for c in cols)
    assert con.execute(f'SELECT count(*) FROM "{table}" WHERE {empty}').fetchone()[0] == 0


@pytest.mark.parametrize("attribute,sizes", sorted(LEVEL_SIZES.items()))
def test_hierarchy_level_domain_sizes(con, attribute, sizes):
    table, cols = _read_hierarchy(con, ADULT / "hierarchies" / f"{attribute}.csv")
    got = [con.execute(f'SELECT count(DISTINCT "{c}") FROM "{table}"').fetchone()[0] for c in cols]
    assert got == sizes


def test_age_hierarchy_intervals(con):
    table, cols = _read_hierarchy(con, ADULT / "hierarchies" / "age.csv")
    # level j label must be '[lo, lo + w)' with lo = floor(age / w) * w, for w = 5, 10, 20
    checks = " OR ".join(
        f"""\"{c}\" <> '[' || (CAST("age" AS INTEGER) // {w}) * {w} || ', '
                       || (CAST("age" AS INTEGER) // {w}) * {w} + {w} || ')'"""
        for c, w in zip(cols[1:4], (5, 10, 20)))
    assert con.execute(f'SELECT count(*) FROM "{table}" WHERE {checks}').fetchone()[0] == 0
    assert con.execute(f"""SELECT "{cols[1]}", "{cols[2]}", "{cols[3]}", "{cols[4]}" FROM "{table}"
                           WHERE "age" = '17'""").fetchone() == ("[15, 20)", "[10, 20)", "[0, 20)", "*")


@pytest.mark.parametrize("attribute,value,ancestors", [
    ("marital_status", "Married-AF-spouse", ["Married", "*"]),
    ("marital_status", "Divorced", ["Previously-married", "*"]),
    ("education", "Preschool", ["Primary-school", "Less-than-HS", "*"]),
    ("education", "Assoc-acdm", ["Some-college-or-Assoc", "HS-or-some-college", "*"]),
    ("education", "Doctorate", ["Graduate", "Bachelors-or-higher", "*"]),
    ("native_country", "Holand-Netherlands", ["Europe", "*"]),
    ("native_country", "Outlying-US(Guam-USVI-etc)", ["North-America", "*"]),
    ("workclass", "Self-emp-inc", ["Self-employed", "*"]),
    ("occupation", "Armed-Forces", ["Service", "*"]),
    ("occupation", "Tech-support", ["White-collar", "*"]),
])
def test_hierarchy_spot_checks(con, attribute, value, ancestors):
    table, cols = _read_hierarchy(con, ADULT / "hierarchies" / f"{attribute}.csv")
    row = con.execute(f'SELECT * FROM "{table}" WHERE "{cols[0]}" = ?', [value]).fetchall()
    assert row == [(value, *ancestors)]


# --------------------------------------------------------------------------------------------
# Adult: policies
# --------------------------------------------------------------------------------------------

QI_ORDER = ["age", "sex", "race", "marital_status", "education", "native_country", "workclass", "salary"]


@pytest.mark.parametrize("name,privacy,release", [
    ("adult_k6", {"k": 6, "max_suppression": 0.0}, "adult_release"),
    ("adult_entropy6", {"k": 6, "l_diversity": {"variant": "entropy", "l": 6}, "max_suppression": 0.0},
     "adult_release"),
    ("adult_demo", {"k": 5, "max_suppression": 0.0}, "adult_demo"),
    ("adult_t02", {"k": 5, "t_closeness": {"t": 0.2, "distance": "hierarchical"}, "max_suppression": 0.0},
     "adult_t02"),
])
def test_adult_policies(name, privacy, release):
    path = ADULT / f"{name}.yaml"
    pol = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert pol["source"] == {"parquet": "adult.parquet", "table": "adult"}
    assert (path.parent / pol["source"]["parquet"]).is_file()
    assert list(pol["quasi_identifiers"]) == QI_ORDER
    assert pol["quasi_identifiers"]["age"] == {"hierarchy": "intervals", "widths": [5, 10, 20]}
    for qi, spec in pol["quasi_identifiers"].items():
        h = spec["hierarchy"]
        if h.endswith(".csv"):
            assert (path.parent / h).is_file(), h
            assert h == f"hierarchies/{qi}.csv"
        else:
            assert h in ("intervals", "suppress")
    if name == "adult_t02":
        assert pol["sensitive"] == {"occupation": {"hierarchy": "hierarchies/occupation.csv"}}
    else:
        assert pol["sensitive"] == ["occupation"]
    assert pol["privacy"] == privacy
    assert pol["release"]["name"] == release


# --------------------------------------------------------------------------------------------
# Adult: rebuild from the raw UCI files
# --------------------------------------------------------------------------------------------

def _raw_dir() -> Path | None:
    for d in RAW_CANDIDATES:
        if (d / "adult.data").is_file() and (d / "adult.test").is_file():
            return d
    return None


@pytest.mark.skipif(_raw_dir() is None, reason="raw UCI Adult files not available")
def test_rebuild_from_raw_gives_the_committed_parquet(con, tmp_path):
    build = _load_module(ADULT / "build.py", "adult_build")
    out = tmp_path / "adult.parquet"
    rebuilt = duckdb.connect()
    assert build.build(_raw_dir(), out, con=rebuilt) == 45_222
    rebuilt.close()
    con.execute(f"CREATE OR REPLACE TEMP VIEW rebuilt AS SELECT * FROM read_parquet('{_sql_path(out)}')")
    assert con.execute("DESCRIBE rebuilt").fetchall() == con.execute("DESCRIBE adult").fetchall()
    only_new = con.execute("SELECT count(*) FROM (SELECT * FROM rebuilt EXCEPT ALL SELECT * FROM adult)").fetchone()
    only_old = con.execute("SELECT count(*) FROM (SELECT * FROM adult EXCEPT ALL SELECT * FROM rebuilt)").fetchone()
    assert only_new == only_old == (0,)
    # and in the same (file) order
    cols = ", ".join(c for c, _ in ADULT_COLUMNS)
    differ = con.execute(f"""
        SELECT count(*) FROM
          (SELECT file_row_number AS i, {cols} FROM read_parquet('{_sql_path(out)}', file_row_number = true)) a
          JOIN (SELECT file_row_number AS i, {cols} FROM read_parquet('{_sql_path(PARQUET)}',
                                                                       file_row_number = true)) b USING (i)
        WHERE ({", ".join("a." + c for c, _ in ADULT_COLUMNS)}) IS DISTINCT FROM
              ({", ".join("b." + c for c, _ in ADULT_COLUMNS)})""").fetchone()[0]
    assert differ == 0


@pytest.mark.skipif(_raw_dir() is None, reason="raw UCI Adult files not available")
def test_raw_adult_data_checksum():
    build = _load_module(ADULT / "build.py", "adult_build")
    assert build.md5_of(_raw_dir() / "adult.data") == build.ADULT_DATA_MD5


# --------------------------------------------------------------------------------------------
# Hospital (TKDD l-diversity paper, Figures 1, 2 and 4)
# --------------------------------------------------------------------------------------------

FIGURE_1 = [
    ("13053", 28, "Russian", "Heart Disease"),
    ("13068", 29, "American", "Heart Disease"),
    ("13068", 21, "Japanese", "Viral Infection"),
    ("13053", 23, "American", "Viral Infection"),
    ("14853", 50, "Indian", "Cancer"),
    ("14853", 55, "Russian", "Heart Disease"),
    ("14850", 47, "American", "Viral Infection"),
    ("14850", 49, "American", "Viral Infection"),
    ("13053", 31, "American", "Cancer"),
    ("13053", 37, "Indian", "Cancer"),
    ("13068", 36, "Japanese", "Cancer"),
    ("13068", 35, "American", "Cancer"),
]
# Figure 2, per record of Figure 1 (zip, age); nationality is '*' everywhere
FIGURE_2 = [("130**", "<30")] * 4 + [("1485*", ">=40")] * 4 + [("130**", "3*")] * 4


@pytest.fixture(scope="module")
def hcon():
    c = duckdb.connect()
    c.execute(f"""CREATE TABLE hospital AS
                  SELECT row_number() OVER () AS id, * FROM read_csv('{_sql_path(HOSPITAL / "hospital.csv")}',
                      header = true, auto_detect = false,
                      columns = {{'zip_code': 'VARCHAR', 'age': 'INTEGER', 'nationality': 'VARCHAR',
                                  'condition': 'VARCHAR'}})""")
    for name in ("zip_code", "age"):
        c.execute(f"""CREATE TABLE h_{name} AS SELECT * FROM read_csv(
                      '{_sql_path(HOSPITAL / "hierarchies" / f"{name}.csv")}', header = true, all_varchar = true,
                      auto_detect = false, columns = {{'v': 'VARCHAR', 'l1': 'VARCHAR', 'l2': 'VARCHAR'}})""")
    c.execute("""CREATE TABLE h_nationality AS
                 SELECT DISTINCT nationality AS v, '*' AS l1 FROM hospital""")
    yield c
    c.close()


def test_hospital_matches_figure_1(hcon):
    assert hcon.execute("SELECT zip_code, age, nationality, condition FROM hospital ORDER BY id").fetchall() == FIGURE_1
    assert hcon.execute("SELECT condition, count(*) FROM hospital GROUP BY 1 ORDER BY 1").fetchall() == [
        ("Cancer", 5), ("Heart Disease", 3), ("Viral Infection", 4)]


def test_hospital_header_and_zip_as_text():
    header = (HOSPITAL / "hospital.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "zip_code,age,nationality,condition"


def _node_sql(z: int, a: int, n: int) -> str:
    """The hospital table generalized to lattice node (zip level z, age level a, nationality level n)."""
    zip_code = "h.zip_code" if z == 0 else f"hz.l{z}"
    age = "CAST(h.age AS VARCHAR)" if a == 0 else f"ha.l{a}"
    nationality = "h.nationality" if n == 0 else f"hn.l{n}"
    return f"""SELECT h.id, {zip_code} AS zip_code, {age} AS age, {nationality} AS nationality, h.condition
               FROM hospital h
               JOIN h_zip_code hz ON hz.v = h.zip_code
               JOIN h_age ha ON ha.v = CAST(h.age AS VARCHAR)
               JOIN h_nationality hn ON hn.v = h.nationality"""


def test_hospital_hierarchies_cover_and_nest(hcon):
    for name, col in (("zip_code", "zip_code"), ("age", "CAST(age AS VARCHAR)")):
        assert hcon.execute(f"SELECT count(*), count(DISTINCT v) FROM h_{name}").fetchone() == \
            hcon.execute(f"SELECT count(DISTINCT {col}), count(DISTINCT {col}) FROM hospital").fetchone()
        assert hcon.execute(f"SELECT count(*) FROM hospital WHERE {col} NOT IN (SELECT v FROM h_{name})"
                            ).fetchone()[0] == 0
        assert hcon.execute(f"SELECT max(n) FROM (SELECT count(DISTINCT l2) n FROM h_{name} GROUP BY l1)"
                            ).fetchone()[0] == 1
        assert hcon.execute(f"SELECT DISTINCT l2 FROM h_{name}").fetchall() == [("*",)]


def test_figure_2_is_node_111(hcon):
    rows = hcon.execute(f"SELECT zip_code, age, nationality FROM ({_node_sql(1, 1, 1)}) ORDER BY id").fetchall()
    assert rows == [(z, a, "*") for z, a in FIGURE_2]
    sizes = hcon.execute(f"""SELECT count(*) FROM ({_node_sql(1, 1, 1)})
                             GROUP BY zip_code, age, nationality ORDER BY 1""").fetchall()
    assert sizes == [(4,), (4,), (4,)]
    # the homogeneity attack: the block of records 9-12 is all Cancer
    assert hcon.execute(f"""SELECT DISTINCT condition FROM ({_node_sql(1, 1, 1)})
                            WHERE zip_code = '130**' AND age = '3*'""").fetchall() == [("Cancer",)]


def test_figure_2_is_the_only_minimal_4_anonymous_node(hcon):
    ok = set()
    for z in range(3):
        for a in range(3):
            for n in range(2):
                k = hcon.execute(f"""SELECT min(c) FROM (SELECT count(*) c FROM ({_node_sql(z, a, n)})
                                     GROUP BY zip_code, age, nationality)""").fetchone()[0]
                if k >= 4:
                    ok.add((z, a, n))
    minimal = {v for v in ok if not any(u != v and all(x <= y for x, y in zip(u, v)) for u in ok)}
    assert minimal == {(1, 1, 1)}


def test_figure_4_is_entropy_2_8_diverse(hcon):
    hcon.execute(f"""CREATE OR REPLACE TABLE fig4 AS SELECT row_number() OVER () AS pos, *
                     FROM read_csv('{_sql_path(HOSPITAL / "figure4.csv")}', header = true, all_varchar = true,
                                   auto_detect = false,
                                   columns = {{'zip_code': 'VARCHAR', 'age': 'VARCHAR', 'nationality': 'VARCHAR',
                                               'condition': 'VARCHAR'}})""")
    blocks = hcon.execute("""SELECT zip_code, age, nationality, list(condition ORDER BY condition)
                             FROM fig4 GROUP BY ALL ORDER BY 1""").fetchall()
    assert [b[:3] for b in blocks] == [("1305*", "<=40", "*"), ("1306*", "<=40", "*"), ("1485*", ">40", "*")]
    for *_, conds in blocks:
        counts = sorted((conds.count(v) for v in set(conds)), reverse=True)
        assert counts == [2, 1, 1]
        h = -sum(c / 4 * math.log(c / 4) for c in counts)
        assert math.exp(h) == pytest.approx(2 * math.sqrt(2))
        assert math.exp(h) >= 2.8
    # Figure 4 lists records 1, 4, 9, 10, 5, 6, 7, 8, 2, 3, 11, 12; each printed row generalizes its record
    order = [1, 4, 9, 10, 5, 6, 7, 8, 2, 3, 11, 12]
    hcon.execute("CREATE OR REPLACE TABLE fig4_ids AS SELECT unnest(?) AS id, generate_subscripts(?, 1) AS pos",
                 [order, order])
    bad = hcon.execute("""SELECT count(*) FROM fig4 f JOIN fig4_ids USING (pos) JOIN hospital h USING (id)
                          WHERE f.condition <> h.condition
                             OR NOT starts_with(h.zip_code, rtrim(f.zip_code, '*'))
                             OR (f.age = '<=40') <> (h.age <= 40)""").fetchone()[0]
    assert bad == 0


def test_hospital_policy():
    pol = yaml.safe_load((HOSPITAL / "hospital_k4.yaml").read_text(encoding="utf-8"))
    assert pol["source"] == {"csv": "hospital.csv", "table": "hospital"}
    assert list(pol["quasi_identifiers"]) == ["zip_code", "age", "nationality"]
    assert pol["quasi_identifiers"]["nationality"] == {"hierarchy": "suppress"}
    for qi in ("zip_code", "age"):
        assert (HOSPITAL / pol["quasi_identifiers"][qi]["hierarchy"]).is_file()
    assert pol["sensitive"] == ["condition"]
    assert pol["privacy"] == {"k": 4}
    assert pol["utility"] == "height"


@pytest.mark.parametrize("folder", ["", "adult", "hospital", "landsend"])
def test_dataset_folders_are_packages(folder):
    assert (DATASETS / folder / "__init__.py").is_file()


# --------------------------------------------------------------------------------------------
# Lands End (synthetic, seeded generator)
# --------------------------------------------------------------------------------------------

LANDSEND = DATASETS / "landsend"
LANDSEND_SCHEMA = [("zipcode", "VARCHAR"), ("order_date", "DATE"), ("gender", "VARCHAR"), ("style", "INTEGER"),
                   ("price", "INTEGER"), ("quantity", "INTEGER"), ("shipment", "VARCHAR"), ("cost", "INTEGER")]
FIGURE_8 = {"zipcode": 31_953, "order_date": 320, "gender": 2, "style": 1_509, "price": 346, "quantity": 1,
            "shipment": 2, "cost": 147}
LANDSEND_HEIGHTS = {"zipcode": 5, "order_date": 3, "gender": 1, "style": 1, "price": 4, "quantity": 1,
                    "shipment": 1}


@pytest.fixture(scope="module")
def landsend():
    return _load_module(LANDSEND / "generate.py", "landsend_generate")


@pytest.fixture(scope="module")
def small(landsend):
    """20,000 rows, seed 7, generated twice in separate connections, and once with seed 8."""
    cons = [duckdb.connect() for _ in range(3)]
    for c, seed in zip(cons, (7, 7, 8)):
        landsend.generate(c, "landsend", rows=20_000, seed=seed)
    yield cons
    for c in cons:
        c.close()


def _fingerprint(con) -> list:
    return con.execute("SELECT * FROM landsend").fetchall()


def test_landsend_schema(small):
    con = small[0]
    assert [(r[0], r[1]) for r in con.execute("DESCRIBE landsend").fetchall()] == LANDSEND_SCHEMA
    assert con.execute("SELECT count(*) FROM landsend").fetchone()[0] == 20_000
    nulls = " OR ".join(f"{c} IS NULL" for c, _ in LANDSEND_SCHEMA)
    assert con.execute(f"SELECT count(*) FROM landsend WHERE {nulls}").fetchone()[0] == 0


def test_landsend_is_deterministic_for_a_seed(small):
    a, b, other = (_fingerprint(c) for c in small)
    assert a == b                      # same seed: same rows in the same order
    assert a != other                  # another seed: another table
    assert sorted(a) != sorted(other)


def test_landsend_values(small):
    con = small[0]
    row = con.execute("""SELECT bool_and(regexp_full_match(zipcode, '[0-9]{5}')),
                                min(order_date), max(order_date),
                                bool_and(gender IN ('F', 'M')), min(style), max(style),
                                min(price), max(price), bool_and(price % 5 = 0 OR price % 100 = 99),
                                bool_and(quantity = 1), bool_and(shipment IN ('Standard', 'Express')),
                                min(cost), max(cost), bool_and(cost % 100 = 0)
                         FROM landsend""").fetchone()
    import datetime as dt
    assert row[0] and row[3] and row[8] and row[9] and row[10] and row[13]
    assert row[1] >= dt.date(2004, 1, 1) and row[2] <= dt.date(2004, 11, 15)
    assert row[4] >= 10_000 and row[5] <= 99_999
    assert row[6] >= 100 and row[7] <= 9_999
    assert row[11] == 0 and row[12] == 14_600     # every cost bucket is covered at 20,000 rows


def test_landsend_small_domains_are_complete_and_skewed(small):
    con = small[0]
    # at 20,000 rows every column with at most 2,000 values is covered (>= 10 rows per value)
    for column, size in FIGURE_8.items():
        n = con.execute(f"SELECT count(DISTINCT {column}) FROM landsend").fetchone()[0]
        if column == "zipcode":
            assert 1_000 < n < size
        else:
            assert n == size, column
    # skewed: the most frequent value is far above the mean frequency. Uniform draws would give a
    # ratio of about 3 to 4 for zipcode (20,000 rows over 31,953 codes) and under 1.5 for the others.
    for column, ratio in {"zipcode": 20, "order_date": 4, "style": 20, "price": 10, "cost": 3}.items():
        top, mean = con.execute(f"""SELECT max(n), avg(n) FROM
                                    (SELECT count(*) AS n FROM landsend GROUP BY {column})""").fetchone()
        assert top > ratio * mean, column
    f = con.execute("SELECT count(*) FILTER (WHERE gender = 'F') / count(*) FROM landsend").fetchone()[0]
    assert 0.58 < f < 0.68


def test_landsend_exact_figure_8_domains_with_enough_rows(landsend):
    # with >= 10 rows per zip code (319,530) every column shows its whole domain
    con = duckdb.connect()
    landsend.generate(con, "t", rows=320_000, seed=3)
    got = con.execute("SELECT " + ", ".join(f"count(DISTINCT {c})" for c in FIGURE_8) + " FROM t").fetchone()
    con.close()
    assert dict(zip(FIGURE_8, got)) == FIGURE_8


def test_landsend_existing_table_is_not_replaced(landsend):
    con = duckdb.connect()
    con.execute("CREATE TABLE landsend AS SELECT 42 AS x")
    with pytest.raises(duckdb.CatalogException):
        landsend.generate(con, "landsend", rows=100, seed=0)
    assert con.execute("SELECT * FROM landsend").fetchall() == [(42,)]
    con.close()


def test_landsend_hierarchies_and_policy(landsend, small, tmp_path):
    con = small[0]
    paths = landsend.write_hierarchies(con, "landsend", tmp_path / "hierarchies")
    assert sorted(paths) == sorted(LANDSEND_HEIGHTS)
    for column, height in LANDSEND_HEIGHTS.items():
        table, cols = _read_hierarchy(con, paths[column])
        assert len(cols) - 1 == height and cols[0] == column
        assert con.execute(f'SELECT DISTINCT "{cols[-1]}" FROM "{table}"').fetchall() == [("*",)]
        n, distinct = con.execute(f'SELECT count(*), count(DISTINCT "{column}") FROM "{table}"').fetchone()
        data = con.execute(f"SELECT count(DISTINCT {column}) FROM landsend").fetchone()[0]
        assert n == distinct == data
        assert con.execute(f"""SELECT count(*) FROM (SELECT DISTINCT CAST({column} AS VARCHAR) AS v FROM landsend)
                               WHERE v NOT IN (SELECT "{column}" FROM "{table}")""").fetchone()[0] == 0
        for lower, upper in zip(cols, cols[1:]):
            assert con.execute(f"""SELECT max(n) FROM (SELECT count(DISTINCT "{upper}") AS n FROM "{table}"
                                   GROUP BY "{lower}")""").fetchone()[0] == 1
    # spot checks of the label formats
    table, _ = _read_hierarchy(con, paths["zipcode"])
    z = con.execute(f'SELECT * FROM "{table}" LIMIT 1').fetchone()
    assert z[1:] == (z[0][:4] + "*", z[0][:3] + "**", z[0][:2] + "***", z[0][:1] + "****", "*")
    table, _ = _read_hierarchy(con, paths["order_date"])
    assert con.execute(f"""SELECT level_1, level_2 FROM "{table}" WHERE order_date = '2004-05-17'""").fetchall() \
        == [("2004-05", "2004-Q2")]
    assert con.execute(f'SELECT count(DISTINCT level_1), count(DISTINCT level_2) FROM "{table}"').fetchone() == (11, 4)
    table, _ = _read_hierarchy(con, paths["price"])
    bad = con.execute(f"""SELECT count(*) FROM "{table}" WHERE level_1 <> '[' || (CAST(price AS INTEGER) // 10) * 10
                          || ', ' || (CAST(price AS INTEGER) // 10) * 10 + 10 || ')'""").fetchone()[0]
    assert bad == 0
    # the policy points at the files that were written
    written = landsend.write_policies(tmp_path / "landsend_k6.yaml", tmp_path / "landsend.parquet",
                                      tmp_path / "hierarchies")
    assert [p.name for p in written] == ["landsend_k6.yaml", "landsend_entropy6.yaml"]
    for p in written:
        pol = yaml.safe_load(p.read_text(encoding="utf-8"))
        assert pol["source"] == {"parquet": "landsend.parquet", "table": "landsend"}
        assert list(pol["quasi_identifiers"]) == list(LANDSEND_HEIGHTS)
        for spec in pol["quasi_identifiers"].values():
            assert (p.parent / spec["hierarchy"]).is_file()
        assert pol["sensitive"] == ["cost"] and pol["privacy"]["k"] == 6
    assert yaml.safe_load(written[1].read_text())["privacy"]["l_diversity"] == {"variant": "entropy", "l": 6}


def test_landsend_cli_writes_parquet(landsend, tmp_path):
    out = tmp_path / "ls.parquet"
    assert landsend.main([str(out), "--rows", "5000", "--seed", "2"]) == 0
    con = duckdb.connect()
    landsend.generate(con, "ref", rows=5_000, seed=2)
    same = con.execute(f"""SELECT count(*) FROM (SELECT * FROM read_parquet('{_sql_path(out)}')
                           EXCEPT ALL SELECT * FROM ref)""").fetchone()[0]
    assert same == 0 and con.execute(f"SELECT count(*) FROM read_parquet('{_sql_path(out)}')").fetchone()[0] == 5_000
    con.close()
    assert (tmp_path / "hierarchies" / "zipcode.csv").is_file() and (tmp_path / "landsend_k6.yaml").is_file()
