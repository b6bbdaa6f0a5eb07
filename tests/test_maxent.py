"""Privacy-MaxEnt's solver on small cases: the paper's examples (Figure 1, Sections 3.1, 4.1, 6) exactly,
Theorem 5 with no knowledge, invariants sound / complete / concise (Theorems 1-3) by enumerating every
assignment, constraints met to the tolerance, and the entropy checked against a generic optimizer and
against feasible perturbations."""
from __future__ import annotations

import itertools
import math
import re

import duckdb
import numpy as np
import pytest
from scipy.linalg import null_space
from scipy.optimize import linprog, lsq_linear

from sqlanon.engine import wrap_connection
from sqlanon.errors import DataError
from sqlanon.maxent import InfeasibleKnowledge, MaxEnt, ReleaseTables, parse_knowledge
from sqlanon.maxent.knowledge import ROW_KNOWLEDGE, Conditional, build_system
from sqlanon.maxent.solver import presolve, solve

# Figure 1(a) and the buckets of Figure 1(b)
FIGURE1 = [("Allen", "male", "college", "Flu", 1), ("Brian", "male", "college", "Pneumonia", 1),
           ("Cathy", "female", "college", "Breast Cancer", 1), ("David", "male", "high school", "Flu", 1),
           ("Ethan", "male", "college", "HIV", 2), ("Frank", "male", "high school", "Pneumonia", 2),
           ("Grace", "female", "junior", "Breast Cancer", 2), ("Helen", "female", "college", "HIV", 3),
           ("Iris", "female", "graduate", "Lung Cancer", 3), ("James", "male", "graduate", "Flu", 3)]
MALE_COLLEGE = {"gender": "male", "degree": "college"}          # q1 of Figure 1(c)
FEMALE_COLLEGE = {"gender": "female", "degree": "college"}      # q2
MALE_HIGH = {"gender": "male", "degree": "high school"}         # q3
TOL = 1e-6


def release_tables(con, rows, qis, prefix="t"):
    """QIT / ST / private / original tables of a bucketized release given as (name, *qi, s, bucket) rows."""
    cols = ", ".join(f'"{q}" VARCHAR' for q in qis)
    con.execute(f"CREATE TABLE {prefix}_d (pseudonym INTEGER, name VARCHAR, {cols}, s VARCHAR, bucket INTEGER)")
    con.executemany(f"INSERT INTO {prefix}_d VALUES ({', '.join('?' * (len(qis) + 4))})",
                    [(i + 1,) + tuple(r) for i, r in enumerate(rows)])
    q = ", ".join(f'"{c}"' for c in qis)
    con.execute(f"CREATE TABLE {prefix}_qit AS SELECT pseudonym, {q}, bucket FROM {prefix}_d")
    con.execute(f"CREATE TABLE {prefix}_st AS SELECT bucket, s, COUNT(*) AS count FROM {prefix}_d GROUP BY ALL")
    con.execute(f"CREATE TABLE {prefix}_original AS SELECT {q}, s FROM {prefix}_d")
    return ReleaseTables(f"{prefix}_qit", f"{prefix}_st", f"{prefix}_original", list(qis), "s")


@pytest.fixture
def toy():
    con = duckdb.connect()
    rel = release_tables(con, FIGURE1, ["gender", "degree"])
    yield MaxEnt(wrap_connection(con), rel)
    con.close()


def random_release(con, seed, buckets=4, size=(3, 5), values=4, prefix="r"):
    """Random small buckets over two attributes; every bucket has distinct sensitive values or not, at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for b in range(1, buckets + 1):
        for _ in range(int(rng.integers(size[0], size[1] + 1))):
            rows.append((f"p{len(rows)}", f"a{rng.integers(3)}", f"c{rng.integers(2)}", f"s{rng.integers(values)}", b))
    return release_tables(con, rows, ["A", "C"], prefix)


def K(*items, persons=None):
    return parse_knowledge({"knowledge": list(items), "persons": persons or {}})


# --------------------------------------------------------------------------------------------------
# Figure 1 and Sections 3.1, 4.1: exact values

def test_no_knowledge_is_the_uniform_bucket_estimate(toy):
    """Eq. 1 / Theorem 5: P(S | Q, B) is the portion of S in bucket B; P(S | Q) averages over Q's buckets."""
    r = toy.solve()
    assert r.bucket_posterior(1, MALE_COLLEGE) == pytest.approx({"Flu": 0.5, "Pneumonia": 0.25,
                                                                  "Breast Cancer": 0.25})
    # female college: one record in bucket 1 (BC 1/4) and one in bucket 3 (BC 0): P(BC | q2) = 1/8
    assert r.posterior_of(FEMALE_COLLEGE)["Breast Cancer"] == pytest.approx(0.125)
    # male college: two records in bucket 1, one in bucket 2: P(Flu) = (2 * 1/2 + 0) / 3
    assert r.posterior_of(MALE_COLLEGE)["Flu"] == pytest.approx(1 / 3)
    np.testing.assert_array_equal(r.x, toy.problem.closed_form())
    assert r.solution.relevant_buckets == 0


def test_breast_cancer_is_certain_for_both_females(toy):
    """Section 1: with P(Breast Cancer | male) = 0 the only female of bucket 1 (Cathy) and of bucket 2
    (Grace) are certain to have breast cancer."""
    r = toy.solve(K({"given": {"gender": "male"}, "sensitive": "Breast Cancer", "probability": 0}))
    assert r.bucket_posterior(1, FEMALE_COLLEGE) == {"Breast Cancer": 1.0}
    assert r.bucket_posterior(2, {"gender": "female", "degree": "junior"}) == {"Breast Cancer": 1.0}
    # the males of bucket 1 share Flu, Flu, Pneumonia uniformly; bucket 3 has no breast cancer: untouched
    assert r.bucket_posterior(1, MALE_COLLEGE) == pytest.approx({"Flu": 2 / 3, "Pneumonia": 1 / 3}, abs=TOL)
    assert r.solution.relevant_buckets == 2 and r.solution.converged
    assert toy.risk(r)["records_certain"] == 2 and toy.risk(r)["baseline_records_certain"] == 0


def test_section_3_1_forces_the_bucket_1_assignment(toy):
    """P(s1 | q2) = 0 and P(s1 or s2 | q3) = 0: q3 can only be s3, q2 only s2, and the two q1 share s1, s2."""
    r = toy.solve(K({"given": FEMALE_COLLEGE, "sensitive": "Breast Cancer", "probability": 0},
                    {"given": MALE_HIGH, "sensitive": ["Breast Cancer", "Flu"], "probability": 0}))
    assert r.bucket_posterior(1, MALE_HIGH) == {"Pneumonia": 1.0}
    assert r.bucket_posterior(1, FEMALE_COLLEGE) == {"Flu": 1.0}
    assert r.bucket_posterior(1, MALE_COLLEGE) == pytest.approx({"Breast Cancer": 0.5, "Flu": 0.5})
    # found by the presolve's propagation, exactly: no cell of bucket 1 is left to the optimizer
    b1 = toy.problem.cell_b == 0
    assert np.all((r.x[b1] == 0) | (np.abs(r.x[b1] - np.round(r.x[b1] * 2) / 2) == 0))


def test_section_4_1_knowledge_constraint(toy):
    """P(Flu | male) = 0.3 becomes sum of P(male-q, Flu, b) over the buckets = 0.3 * P(male) = 0.18.

    The paper lists four terms; P({male, college}, Flu, 3) is a zero-invariant ({male, college} is not in
    bucket 3), so three cells remain: (male college, 1), (male high school, 1), (male graduate, 3)."""
    know = K({"given": {"gender": "male"}, "sensitive": "Flu", "probability": 0.3})
    items, _ = toy.resolve(know)
    system = build_system(toy.problem, items)
    row = np.flatnonzero(system.kind == ROW_KNOWLEDGE)[0]
    cells = system.rows.indices[system.rows.indptr[row]:system.rows.indptr[row + 1]]
    p = toy.problem
    got = sorted((int(p.bucket_labels[p.cell_b[c]]), p.q_text(p.cell_q[c]), p.s_values[p.cell_s[c]]) for c in cells)
    assert got == [(1, "gender=male, degree=college", "Flu"), (1, "gender=male, degree=high school", "Flu"),
                   (3, "gender=male, degree=graduate", "Flu")]
    assert system.lo[row] == system.hi[row] == pytest.approx(0.18 * p.N)
    r = toy.solve(know)
    assert r.x[cells].sum() == pytest.approx(1.8, abs=TOL)
    assert r.posterior_of({"gender": "male", "degree": "graduate"})["Flu"] < 1


# --------------------------------------------------------------------------------------------------
# Section 5: invariants

def _assignments(qs, ss):
    """Every assignment of a bucket (Definition 5.2): the multiset of SA values matched to the QI occurrences."""
    seen = set()
    for perm in itertools.permutations(ss):
        pairs = tuple(sorted(zip(qs, perm)))
        if pairs not in seen:
            seen.add(pairs)
            yield pairs


@pytest.mark.parametrize("seed", range(6))
def test_invariants_sound_complete_and_concise(seed):
    """Theorem 1: every assignment satisfies the QI-/SA-invariants; Theorem 2: the assignments span exactly the
    solutions of the invariants (affine hull dimension = cells - rank); Theorem 3: with one SA row per bucket
    dropped the rows are independent (g + h - 1 per bucket)."""
    con = duckdb.connect()
    rel = random_release(con, seed, buckets=2, size=(3, 5), values=3)
    p = MaxEnt(wrap_connection(con), rel).problem
    A, rhs = p.invariant_matrix(drop_redundant=False)
    A_min, _ = p.invariant_matrix(drop_redundant=True)
    dense = A.toarray()
    most = 0
    for b in range(p.buckets):
        cells = np.flatnonzero(p.cell_b == b)
        qs = [int(q) for c in cells for q in [p.cell_q[c]]]
        occ_q = [q for q in sorted(set(qs)) for _ in range(int(p.qb_n[p.cell_qb[cells[qs.index(q)]]]))]
        ss = [int(p.cell_s[c]) for c in cells]
        occ_s = [s for s in sorted(set(ss)) for _ in range(int(p.sb_n[p.cell_sb[cells[ss.index(s)]]]))]
        index = {(int(p.cell_q[c]), int(p.cell_s[c])): c for c in cells}
        rows = np.flatnonzero(dense[:, cells].any(axis=1))
        vectors = []
        for pairs in _assignments(occ_q, occ_s):
            x = np.zeros(A.shape[1])
            for q, s in pairs:
                x[index[(q, s)]] += 1          # zero-invariants: an assignment only uses QI(b) x SA(b)
            np.testing.assert_allclose(A[rows] @ x, rhs[rows])           # Theorem 1
            vectors.append(x[cells])
        V = np.array(vectors)
        most = max(most, len(V))
        hull_dim = np.linalg.matrix_rank(V[1:] - V[0]) if len(V) > 1 else 0
        assert hull_dim == len(cells) - np.linalg.matrix_rank(dense[np.ix_(rows, cells)])   # Theorem 2
        g, h = len(set(qs)), len(set(ss))
        sub = A_min.toarray()[:, cells]
        sub = sub[sub.any(axis=1)]
        assert sub.shape[0] == g + h - 1 == np.linalg.matrix_rank(sub)                      # Theorem 3
    assert most > 1                             # some bucket had several assignments to tell apart
    con.close()


# --------------------------------------------------------------------------------------------------
# the solver against a generic optimizer, feasibility and optimality

def _entropy(x):
    x = x[x > 0]
    return float(-(x * np.log(x)).sum())


def _kkt(system, x, tol=1e-4):
    return _kkt_rows(system.rows.toarray(), system.lo, system.hi, x, tol)


def _kkt_rows(A, lo, hi, x, tol=1e-4):
    """Optimality certificate (Karush-Kuhn-Tucker): at the maximum, log x is a combination of the active rows
    over the positive cells, with multipliers >= 0 on lower bounds and <= 0 on upper bounds that hold with
    equality; a cell may be 0 only if no feasible point gives it more (checked by a linear program)."""
    ax = A @ x
    eq = lo == hi
    at_lo = ~eq & (np.abs(ax - lo) <= 1e-5)
    at_hi = ~eq & np.isfinite(hi) & (np.abs(ax - hi) <= 1e-5)
    active = eq | at_lo | at_hi
    pos = x > 0
    for c in np.flatnonzero(~pos):  # a zero is only right where every feasible point has it
        cost = np.zeros(len(x))
        cost[c] = -1
        fin = ~eq & np.isfinite(hi)
        lp = linprog(cost, A_eq=A[eq], b_eq=lo[eq], A_ub=np.vstack([-A[~eq], A[fin]]),
                     b_ub=np.concatenate([-lo[~eq], hi[fin]]), bounds=(0, None), method="highs")
        assert lp.status == 0 and -lp.fun < 1e-9
    low = np.where((at_lo & ~at_hi)[active], 0.0, -np.inf)
    high = np.where((at_hi & ~at_lo)[active], 0.0, np.inf)
    fit = lsq_linear(A[active][:, pos].T, np.log(x[pos]), bounds=(low, high), tol=1e-12)
    assert np.abs(fit.fun).max() < tol
    return int((at_lo | at_hi).sum())


KNOWLEDGE_SETS = [
    [{"given": {"A": "a0"}, "sensitive": "s1", "probability": 0.5}],
    [{"given": {"C": "c1"}, "sensitive": ["s0", "s2"], "at_least": 0.6}],
    [{"given": {"A": "a1", "C": "c0"}, "sensitive": "s0", "at_most": 0.1},
     {"given": {"A": "a2"}, "sensitive": "s3", "at_least": 0.2, "at_most": 0.4}],
]


def _truthful(me, items):
    """Replace each item's bound by one that the original records satisfy (so the knowledge is feasible)."""
    rows = me.backend.fetchall("select_all.sql", relation=me.release.truth)
    out = []
    for it in items:
        match = [r for r in rows if all(r[["A", "C"].index(a)] == v for a, v in it["given"].items())]
        vals = it["sensitive"] if isinstance(it["sensitive"], list) else [it["sensitive"]]
        p = sum(r[2] in vals for r in match) / len(match) if match else 0.0
        it = dict(it)
        if "probability" in it:
            it["probability"] = p
        else:
            it["at_least"] = min(it.get("at_least", 0.0), p)
            it["at_most"] = max(it.get("at_most", 1.0), p)
            if it["at_least"] > 0 and it.get("at_most", 1.0) < 1:
                it["at_least"], it["at_most"] = max(0.0, p - 0.05), min(1.0, p + 0.05)
        out.append(it)
    return out


@pytest.mark.parametrize("seed, which", [(s, k) for s in range(3) for k in range(len(KNOWLEDGE_SETS))])
def test_solver_meets_constraints_and_is_optimal(seed, which):
    con = duckdb.connect()
    me = MaxEnt(wrap_connection(con), random_release(con, 10 + seed))
    know = K(*_truthful(me, KNOWLEDGE_SETS[which]))
    r = me.solve(know, relevant="all")
    items, _ = me.resolve(know)
    system = build_system(me.problem, items)
    A = system.rows
    ax = A @ r.solution.x
    assert np.all(ax >= system.lo - TOL) and np.all(ax <= system.hi + TOL)        # constraints to tolerance
    assert r.solution.converged and r.solution.max_violation <= TOL
    _kkt(system, r.solution.x)                                                  # optimal (convex problem)
    # relevant buckets only (Theorem 5 for the rest) gives the same answer
    np.testing.assert_allclose(me.solve(know).x, r.x, atol=1e-5)
    con.close()


@pytest.mark.parametrize("seed", range(4))
def test_entropy_is_not_improved_by_feasible_perturbations(seed):
    """x* + t d for d in the null space of the active rows, restricted to the positive cells, stays feasible
    for small t and never has a larger entropy."""
    con = duckdb.connect()
    me = MaxEnt(wrap_connection(con), random_release(con, 20 + seed, buckets=3))
    know = K(*_truthful(me, [{"given": {"A": "a0"}, "sensitive": "s1", "probability": 0.5},
                             {"given": {"C": "c0"}, "sensitive": "s2", "probability": 0.5}]))
    r = me.solve(know)
    items, _ = me.resolve(know)
    system = build_system(me.problem, items)
    x = r.solution.x
    pos = x > 1e-9
    N = null_space(system.rows.toarray()[:, pos])
    rng = np.random.default_rng(seed)
    h0 = _entropy(x)
    assert N.shape[1] > 0                       # there are feasible directions to try
    for _ in range(50):
        d = np.zeros_like(x)
        d[pos] = N @ rng.normal(size=N.shape[1])
        t = 1e-3 * x[pos].min() / max(np.abs(d).max(), 1e-12)
        for step in (t, -t):
            y = x + step * d
            assert np.all(y >= 0)
            assert _entropy(y) <= h0 + 1e-12
    con.close()


def test_no_knowledge_solver_returns_the_closed_form():
    """Every bucket through presolve and L-BFGS-B with no knowledge: Theorem 5 within the tolerance."""
    con = duckdb.connect()
    me = MaxEnt(wrap_connection(con), random_release(con, 7, buckets=40, size=(2, 8), values=6))
    r = me.solve(relevant="all")
    assert r.solution.relevant_buckets == 40 and r.solution.converged
    np.testing.assert_allclose(r.x, me.problem.closed_form(), atol=TOL)
    assert r.entropy() == pytest.approx(r.entropy(baseline=True), abs=1e-9)
    con.close()


def test_inequality_knowledge_binds_only_when_violated(toy):
    """0.6 <= P(Flu | male, college): the uniform estimate (1/3) is raised to exactly the bound; a bound the
    uniform estimate already meets changes nothing (Section 4.5)."""
    r = toy.solve(K({"given": MALE_COLLEGE, "sensitive": "Flu", "at_least": 0.6}))
    assert r.posterior_of(MALE_COLLEGE)["Flu"] == pytest.approx(0.6, abs=TOL)
    loose = toy.solve(K({"given": MALE_COLLEGE, "sensitive": "Flu", "at_least": 0.2, "at_most": 0.5}))
    np.testing.assert_allclose(loose.x, toy.problem.closed_form(), atol=TOL)


# --------------------------------------------------------------------------------------------------
# Section 6: knowledge about individuals

def _expanded(r):
    """Our solution in the pseudonym model of Figure 4 in full: one variable per (pseudonym, q, s, b), every
    record of q its own pseudonym; the records of q no knowledge names share their group's cells equally.
    Returns the constraint rows of that model (QI, SA, one per pseudonym, the knowledge) and the variables."""
    system, p, x = r.system, r.problem, r.solution.x
    var, val = [], []
    for c in range(system.cells):
        base, who = int(system.cell_base[c]), int(system.cell_who[c])
        q = int(p.cell_q[base])
        if who >= 0 and system.groups[who][1] is not None:
            names = [system.groups[who][1]]
        else:
            m = system.groups[who][2] if who >= 0 else int(p.q_n[q])
            names = [f"q{q}#{i}" for i in range(m)]
        for n in names:
            var.append((base, n))
            val.append(x[c] / len(names))
    val = np.array(val)
    rows, rhs = [], []
    for qb in range(len(p.qb_n)):
        rows.append([p.cell_qb[c] == qb for c, _ in var])
        rhs.append(p.qb_n[qb])
    for sb in range(len(p.sb_n)):
        rows.append([p.cell_sb[c] == sb for c, _ in var])
        rhs.append(p.sb_n[sb])
    for who in sorted({w for _, w in var}):
        rows.append([w == who for _, w in var])
        rhs.append(1.0)
    for it in r.items:
        vals = {p.s_codes[v] for v in it.values}
        rows.append([w in it.persons and p.cell_s[c] in vals for c, w in var])
        rhs.append(it.low)
    return np.array(rows, dtype=float), np.array(rhs, dtype=float), val


ALICE = {"gender": "male", "degree": "college"}         # q1, carried by three records (Figure 4: i1, i2, i3)
BOB = {"gender": "female", "degree": "college"}         # q2
CHARLIE = {"gender": "female", "degree": "graduate"}    # q5, unique


@pytest.mark.parametrize("items", [
    # (1) probabilistic knowledge about an individual and one value
    [{"person": "Alice", "sensitive": "Flu", "probability": 0.2}],
    # (2) an individual has one of several values
    [{"person": "Alice", "sensitive": ["Breast Cancer", "HIV"], "probability": 1}],
    # (3) two of three persons have HIV
    [{"persons": ["Alice", "Bob", "Charlie"], "sensitive": "HIV", "count": 2}],
])
def test_knowledge_about_individuals_matches_the_full_pseudonym_model(toy, items):
    know = K(*items, persons={"Alice": ALICE, "Bob": BOB, "Charlie": CHARLIE})
    r = toy.solve(know)
    assert r.solution.converged
    A, b, x = _expanded(r)
    np.testing.assert_allclose(A @ x, b, atol=TOL)                 # feasible in the full pseudonym model
    _kkt_rows(A, b, b, x)                                          # and its maximum-entropy point there
    for dist in r.persons.values():
        assert sum(dist.values()) == pytest.approx(1.0, abs=TOL)
    if items[0].get("probability") == 0.2:
        assert r.persons["Alice"]["Flu"] == pytest.approx(0.2, abs=TOL)
    if "count" in items[0]:
        assert sum(r.persons[w].get("HIV", 0.0) for w in ("Alice", "Bob", "Charlie")) == pytest.approx(2, abs=TOL)


def test_more_persons_than_records_is_infeasible(toy):
    persons = {n: ALICE for n in ("a", "b", "c", "d")}     # q1 has three records
    with pytest.raises(InfeasibleKnowledge, match="only 3 published record"):
        toy.solve(K({"persons": list(persons), "sensitive": "Flu", "at_least": 0}, persons=persons))


# --------------------------------------------------------------------------------------------------
# infeasible knowledge, and the linear program for zeros the presolve cannot see

def test_contradicting_the_release_is_infeasible(toy):
    # bucket 1's breast cancer must go to someone: not a male and not its only female
    with pytest.raises(InfeasibleKnowledge, match="bucket 1"):
        toy.solve(K({"given": {"gender": "male"}, "sensitive": "Breast Cancer", "probability": 0},
                    {"given": FEMALE_COLLEGE, "sensitive": "Breast Cancer", "probability": 0}))
    # P(Flu | male, graduate) = 1 is fine (James); = 1 for female graduate too cannot be: bucket 3 has one Flu
    toy.solve(K({"given": {"gender": "male", "degree": "graduate"}, "sensitive": "Flu", "probability": 1}))
    with pytest.raises(InfeasibleKnowledge):
        toy.solve(K({"given": {"degree": "graduate"}, "sensitive": "Flu", "at_least": 0.9},
                    {"given": {"gender": "female", "degree": "graduate"}, "sensitive": "Lung Cancer",
                     "at_least": 0.5}))


def test_linear_program_finds_zeros_the_presolve_cannot(toy):
    """Bucket 3 (three records, three values) with x(q2, HIV) + x(q2, Lung Cancer) = 1 as a plain row: q2's
    Flu cell is forced to 0, which no single-row rule sees; the dual alone would only approach it."""
    system = build_system(toy.problem, [Conditional((("gender", "female"), ("degree", "college")),
                                                    ("HIV", "Lung Cancer"), 0.5, 0.5, "test")])
    # the row over both female-college cells would include bucket 1's; keep bucket 3's only
    row = np.flatnonzero(system.kind == ROW_KNOWLEDGE)[0]
    rows = system.rows.tolil()
    p = toy.problem
    for c in rows.rows[row][:]:
        if p.bucket_labels[p.cell_b[system.cell_base[c]]] != 3:
            rows[row, c] = 0
    system.rows = rows.tocsr()
    system.rows.eliminate_zeros()
    system.lo[row] = system.hi[row] = 1.0
    A = system.rows
    free, value = presolve(system, A, system.lo, system.hi, np.arange(A.shape[0]))
    assert free.sum() > 0                                   # the presolve leaves it to the optimizer
    sol = solve(system, TOL, relevant="all")
    assert sol.linear_program and sol.converged
    q2_flu = [c for c in range(system.cells) if p.bucket_labels[p.cell_b[c]] == 3
              and p.q_text(p.cell_q[c]) == "gender=female, degree=college" and p.s_values[p.cell_s[c]] == "Flu"]
    assert sol.x[q2_flu[0]] == 0.0


def test_knowledge_file_errors_name_the_field(toy):
    from sqlanon.errors import PolicyError
    with pytest.raises(PolicyError, match=r"knowledge\[0\].given.sex"):
        toy.solve(K({"given": {"sex": "male"}, "sensitive": "Flu", "probability": 0.1}))
    with pytest.raises(PolicyError, match=r"knowledge\[0\].sensitive.*'Cancer'"):
        toy.solve(K({"given": {"gender": "male"}, "sensitive": "Cancer", "probability": 0.1}))
    with pytest.raises(PolicyError, match=r"knowledge\[0\].*between 0 and 1"):
        K({"given": {"gender": "male"}, "sensitive": "Flu", "probability": 1.5})
    with pytest.raises(PolicyError, match=r"knowledge\[0\].*not defined under persons"):
        K({"person": "Zoe", "sensitive": "Flu", "probability": 0.5})
    with pytest.raises(PolicyError, match=r"at_least 0.6 is above at_most 0.2"):
        K({"given": {"gender": "male"}, "sensitive": "Flu", "at_least": 0.6, "at_most": 0.2})


def test_accuracy_is_the_weighted_kl_of_section_7(toy):
    """sum_q P(q) sum_s P(s|q) ln(P(s|q) / P*(s|q)), recomputed here from the 10 records of Figure 1."""
    r = toy.solve(K({"given": {"gender": "male"}, "sensitive": "Breast Cancer", "probability": 0}))
    truth = {}
    for _, g, d, s, _ in FIGURE1:
        truth.setdefault((g, d), []).append(s)
    for baseline, key in ((False, "estimation_accuracy"), (True, "baseline_estimation_accuracy")):
        kl = 0.0
        for (g, d), ss in truth.items():
            post = r.posterior_of({"gender": g, "degree": d}, baseline=baseline)
            for s in set(ss):
                ps = ss.count(s) / len(ss)
                kl += len(ss) / 10 * ps * math.log(ps / post[s])
        assert toy.accuracy(r)[key] == pytest.approx(kl, rel=1e-9)
    assert toy.accuracy(r)["estimation_accuracy"] < toy.accuracy(r)["baseline_estimation_accuracy"]


@pytest.mark.parametrize("change, message", [
    # (statement run on Figure 1's tables, the one line refusing them)
    ("UPDATE t_st SET count = -1 WHERE bucket = 1 AND s = 'Flu'", "1 row(s) of t_st have a count that is NULL"),
    ("UPDATE t_st SET count = NULL WHERE bucket = 2 AND s = 'HIV'", "1 row(s) of t_st have a count that is NULL"),
    ("ALTER TABLE t_st ALTER count TYPE DOUBLE; UPDATE t_st SET count = count / 2 WHERE bucket = 3",
     "3 row(s) of t_st have a count that is NULL, negative or not whole"),
    ("ALTER TABLE t_st ALTER count TYPE VARCHAR", "column 'count' of t_st is VARCHAR"),
    ("UPDATE t_st SET bucket = NULL WHERE bucket = 3 AND s = 'HIV'", "1 row(s) of t_st have no bucket"),
    ("UPDATE t_st SET s = NULL WHERE bucket = 3 AND s = 'HIV'", "1 row(s) of t_st have a NULL s"),
    ("UPDATE t_qit SET bucket = NULL WHERE pseudonym = 1", "1 row(s) of t_qit have no bucket"),
    ("UPDATE t_qit SET degree = NULL WHERE pseudonym < 3", "2 row(s) of t_qit have a NULL quasi-identifier"),
    # a negative row that made a bucket's sum right was left out of it, and the sizes named were not the table's
    ("INSERT INTO t_st VALUES (1, 'Flu', 1), (1, 'Flu', -1)", "1 row(s) of t_st have a count that is NULL"),
    ("UPDATE t_st SET count = 3 WHERE bucket = 1 AND s = 'Flu'",
     "a bucket has 4 record(s) in t_qit and 5 in t_st"),
])
def test_hand_made_bucketized_tables_that_no_release_could_be_are_refused(change, message):
    con = duckdb.connect()
    rel = release_tables(con, FIGURE1, ["gender", "degree"])
    con.execute(change)
    with pytest.raises(DataError, match=re.escape(message)):
        MaxEnt(wrap_connection(con), rel)
    con.close()


@pytest.mark.parametrize("change", [
    "INSERT INTO t_st VALUES (1, 'HIV', 0)",                                   # a zero count adds nothing
    "UPDATE t_st SET count = 1 WHERE bucket = 1 AND s = 'Flu'; INSERT INTO t_st VALUES (1, 'Flu', 1)",  # summed
    "ALTER TABLE t_st ALTER count TYPE DECIMAL(9, 2)",                         # whole numbers of another type
])
def test_hand_made_bucketized_tables_read_as_anatomy_reads_them(change):
    con = duckdb.connect()
    want = MaxEnt(wrap_connection(con), release_tables(con, FIGURE1, ["gender", "degree"]))
    con2 = duckdb.connect()
    rel = release_tables(con2, FIGURE1, ["gender", "degree"])
    con2.execute(change)
    got = MaxEnt(wrap_connection(con2), rel)
    assert got.problem.N == want.problem.N == 10
    for cells in ("cell_b", "cell_q", "cell_s", "cell_nq", "cell_ns"):
        assert np.array_equal(getattr(got.problem, cells), getattr(want.problem, cells))
    con.close()
    con2.close()


def test_a_number_in_the_knowledge_finds_the_release_text_equal_to_it():
    """`given: {weight: 70}` against a DOUBLE column released as '70.0' was refused ('70' does not occur), while
    sensitive values were matched by value. Two texts equal to the number are two labels: refused as ambiguous."""
    from sqlanon.errors import PolicyError
    rows = [(f"p{i}", w, s, 1 + i // 4) for i, (w, s) in enumerate(
        [("70.0", "Flu"), ("70.0", "HIV"), ("0.0", "Flu"), ("-0.0", "HIV"),
         ("70.0", "Flu"), ("0.5", "HIV"), ("0.0", "Cold"), ("70.0", "Cold")])]
    con = duckdb.connect()
    maxent = MaxEnt(wrap_connection(con), release_tables(con, rows, ["weight"]))
    item = {"sensitive": "HIV", "probability": 0.0}
    by_number = maxent.solve(K({"given": {"weight": 70}, **item}))
    by_text = maxent.solve(K({"given": {"weight": "70.0"}, **item}))
    assert by_number.posterior_of({"weight": "70.0"}) == by_text.posterior_of({"weight": "70.0"})
    assert by_number.posterior_of({"weight": "70.0"}).get("HIV", 0.0) == pytest.approx(0.0, abs=1e-9)
    assert maxent.solve(K({"given": {"weight": 0.5}, **item})).posterior_of({"weight": "0.5"}).get("HIV", 0.0) == \
        pytest.approx(0.0, abs=1e-9)
    with pytest.raises(PolicyError, match=r"value '0' is equal to '-0.0', '0.0' in the release"):
        maxent.solve(K({"given": {"weight": 0}, **item}))
    with pytest.raises(PolicyError, match="value '71' does not occur in the release"):
        maxent.solve(K({"given": {"weight": 71}, **item}))
    con.close()
    # compared exactly: through floats 2^53 + 1 met 2^53, another record
    con = duckdb.connect()
    rows = [(f"p{i}", a, s, 1 + i // 4) for i, (a, s) in enumerate(
        [("9007199254740992", "Flu"), ("9007199254741002", "HIV"), ("9007199254740992", "HIV"),
         ("9007199254741002", "Flu")])]
    maxent = MaxEnt(wrap_connection(con), release_tables(con, rows, ["acct"]))
    with pytest.raises(PolicyError, match="value '9007199254740993' does not occur in the release"):
        maxent.solve(K({"given": {"acct": 9007199254740993}, **item}))
    con.close()
