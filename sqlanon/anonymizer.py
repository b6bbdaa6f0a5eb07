"""One anonymization run: policy -> frequency set -> lattice search -> chosen node -> release -> manifest.

The release is recorded in the catalog sqlanon_releases of its database, whose row holds the manifest
JSON (`sqlanon.catalog`); `write_manifest()` writes the file (default: `<release>.manifest.json` beside
the database).

This is the Python API the CLI drives::

    run = Anonymization(load_policy("policy.yaml"), db="out.duckdb")
    run.search()            # all minimal satisfying nodes
    run.choose()            # the best one by the policy's utility metric
    run.materialize()       # the release table/view (+ exports)
    run.manifest()          # the JSON manifest (docs/DESIGN.md section 3.3)
"""
from __future__ import annotations

import copy
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from .catalog import new_release_id, policy_hash
from .checker import NodeChecker, NodeResult
from .engine import attach_source, open_backend, wrap_connection
from .errors import DataError, PolicyError
from .frequency import PREFIX, FrequencySet, NodeCounts, free_prefix, source_stamp
from .heuristic import heuristic_search
from .lattice import Lattice, SearchResult
from .metrics import all_metrics
from .models import criteria_from_policy
from .models.ldiversity import xlogx
from .models.profile import achieved_profile, achieved_profile_in_chunks
from .optimum import Optimum, Scorer, bounded_applies, bounded_optimum, find_optimum
from .policy import Policy, load_policy
from .progress import Quiet
from .release import Output, materialize, select_sql
from .search import find_minimal
from .version import __version__

# the manifest's privacy profile (`Anonymization.achieved`) of a node with more blocks times sensitive values
# than this is computed from sparse counts, this many cells at a time (16 M: 128 MB of counts)
ACHIEVED_DENSE_CELLS = 1 << 24
NOTHING_SATISFIES = ("no generalization satisfies the policy, not even the most general one; loosen the privacy "
                     "models or allow suppression (privacy.max_suppression)")


def _same_blocks(block_codes: np.ndarray, result: NodeResult) -> None:
    """A second query of a node must return the node result's blocks in the same order."""
    if len(block_codes) != len(result.counts.sizes) or not np.array_equal(block_codes, result.counts.block_codes):
        raise RuntimeError("node queries returned blocks in different orders")  # a bug, not user error


@dataclass
class Candidate:
    levels: dict[str, int]
    result: NodeResult | None          # None for a minimal node scored from the search's recorded sizes
    metrics: dict

    def as_dict(self) -> dict:
        return {"levels": dict(self.levels), "metrics": dict(self.metrics)}


def default_db(policy: Policy) -> Path | None:
    """Where the release goes: the source's DuckDB file (`database:` of a table or query), else a file beside
    the policy."""
    if policy.source.kind in ("table", "query") and policy.source.database is not None:
        return policy.source.database
    stem = policy.path.stem if policy.path else "sqlanon"
    return policy.base_dir / f"{stem}.duckdb"


class Anonymization:
    """One run of a policy over its source: the frequency set, the lattice, the search, the chosen node, the
    release and its manifest. Use it in a `with` block (or call `close()`).

    Args:
        policy: a `Policy`, a policy as a dict, or the path of a policy YAML file.
        db: the DuckDB file the release goes into (default: the source's database, or a file beside the
            policy); ignored with `connection`.
        connection: an open connection (DuckDB, psycopg, a SparkSession) whose tables the policy's source
            may name; the release is written there too. `close()` leaves it open: the caller closes it
            (the run's temporary work tables go with it).
        progress: a `sqlanon.progress.Progress` to show the search's progress (default: none).

    Raises:
        PolicyError, DataError: the policy or the data is unusable (the message names the field or column).

    A table of six patients, made 3-anonymous by generalizing zip codes and ages:

    >>> from sqlanon.examples import PATIENTS_POLICY as policy, patients_connection
    >>> con = patients_connection()       # the table `patients` of six rows (zip, age, disease)
    >>> with Anonymization(policy, connection=con) as run:
    ...     _ = run.search()
    ...     chosen = run.choose()
    ...     outputs = run.materialize()
    ...     released = con.execute("SELECT zip, age, count(*) FROM patients_release GROUP BY ALL ORDER BY ALL")
    ...     print(released.fetchall())
    [('130**', '[20, 40)', 3), ('148**', '[40, 60)', 3)]
    >>> chosen.levels, chosen.metrics["discernibility"]
    ({'zip': 2, 'age': 2}, 18.0)
    """

    def __init__(self, policy: Policy | dict | str | Path, db: Path | str | None = None,
                 connection: duckdb.DuckDBPyConnection | None = None, progress=None):
        self.policy = policy if isinstance(policy, Policy) else load_policy(policy)
        self.progress = progress or Quiet()
        self.timings: dict[str, float] = {}
        self.release_id = new_release_id()
        self._manifest: dict | None = None     # fixed when the release is written (the catalog holds it)
        self.manifest_extra: dict = {}         # sections a command adds (marginals, ...): in the catalog's copy too
        t = time.perf_counter()
        if connection is not None:
            self.backend = wrap_connection(connection)
        else:
            self.backend = open_backend(self.policy.source, db if db is not None else default_db(self.policy))
        # a connection of its own holds no other run's work tables (temporary tables are per connection;
        # Spark's session is shared in the process), so the first prefix is free without asking
        own = connection is None and self.policy.source.engine != "spark"
        try:        # anything failing or interrupted from here closes the database (a new file is removed)
            self._prepare(own)
            self.checker = NodeChecker(self.fs, self.criteria, self.policy.max_suppression)
            qis = self.fs.qis
            self.lattice = Lattice(tuple(q.name for q in qis), tuple(q.height for q in qis),
                                   same_blocks=tuple(tuple(q.hierarchy.same_blocks()) for q in qis),
                                   one_block=tuple(tuple(size == 1 for size in q.hierarchy.domain_sizes())
                                                   for q in qis))
        except BaseException:
            if connection is None:
                self.backend.close()
            raise
        self.timings["prepare"] = time.perf_counter() - t
        self.result: SearchResult | None = None
        self.candidates: list[Candidate] = []
        self.chosen: Candidate | None = None
        self.optimum: Optimum | None = None
        self.scored = ""                      # which metrics `candidates` carry: "all", "policy" or "search"
        self.outputs: list[Output] = []
        # the profile of a node result computed beside its evaluation (`_evaluate_streamed`)
        self._profiled: tuple[NodeResult, dict] | None = None

    def _prepare(self, own_connection: bool = False) -> None:
        # the run's own prefix names its work tables and its view of the source: a second run on the connection
        # attaches its source under another name, so this run's release still reads this run's source
        prefix = PREFIX if own_connection else free_prefix(self.backend)
        stamp = source_stamp(self.backend, self.policy.source)     # before the reader can sniff the file
        self.source = attach_source(self.backend, self.policy.source, f"{prefix}_source")
        self.fs = FrequencySet(self.backend, self.source, self.policy, prefix, stamp=stamp).build()
        self.criteria = criteria_from_policy(self.policy.privacy_model or self.policy.privacy,
                                             {s.name: s.domain for s in self.fs.sensitives})
        k = next((c.k for c in self.criteria if hasattr(c, "k")), None)
        if k is not None and k > self.fs.rows:
            unit = "distinct persons (entity_key)" if self.policy.entity_key else "rows"
            raise PolicyError("privacy.k", f"k = {k} is larger than the table ({self.fs.rows} {unit}); no release "
                              "can be k-anonymous: lower k")

    def __enter__(self) -> Anonymization:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- search -------------------------------------------------------------------------------
    def search(self, mode: str = "incognito") -> SearchResult:
        """Find the minimal satisfying nodes (and, past `search.max_nodes`, the heuristic's best release).

        Args:
            mode: "incognito" (exact; the heuristic for lattices larger than the policy's
                `search.max_nodes`), "brute_force" (every node, the tests' reference) or "heuristic".

        Returns:
            The `SearchResult` (also `self.result`).
        """
        t = time.perf_counter()
        self.optimum, self.candidates, self.chosen = None, [], None
        options = self.policy.search
        if mode == "incognito" and self.lattice.size > options.max_nodes:
            mode = "heuristic"
        self.progress.message(f"lattice of {self.lattice.size:,} nodes ({len(self.lattice.names)} quasi-identifiers)"
                              + (f": heuristic search for at most {options.time_limit_s:g} s" if mode == "heuristic"
                                 else ""))
        if mode == "heuristic":
            self.result, self.optimum = heuristic_search(self.lattice, self.checker, self.policy.utility,
                                                         options.time_limit_s, self.progress)
        else:
            self.result = find_minimal(self.lattice, self.checker, mode, self.progress)
        self.progress.done()
        self.timings["search"] = time.perf_counter() - t
        return self.result

    def searched(self) -> SearchResult:
        """The search's result, searching first when `search` has not run. A release already chosen without it
        (the bounded optimum search, `use_node`) is kept; after the bounded search its scores go to the
        minimal nodes."""
        if self.result is not None:
            return self.result
        optimum, chosen = self.optimum, self.chosen   # a release chosen without the search (bounded, `use_node`)
        result = self.search()
        if chosen is not None:
            self.optimum, self.chosen = optimum, chosen
        if optimum is not None:
            self._list_minimal(result, optimum)
        return result

    def _list_minimal(self, searched: SearchResult, optimum: Optimum) -> None:
        """The minimal nodes as candidates, with the policy metric where the optimum search scored them."""
        metric = self.policy.utility
        self.candidates = [Candidate(self.lattice.levels(n), None,
                                     {metric: optimum.scores[n]} if n in optimum.scores else {})
                           for n in searched.minimal]
        self.scored = "search"

    def chosen_result(self) -> tuple[Candidate, NodeResult]:
        """The chosen node and its evaluation, choosing first when neither `choose` nor `use_node` ran."""
        chosen = self.chosen if self.chosen is not None else self.choose()
        if chosen.result is None:       # choose() and use_node() always evaluate their node
            raise RuntimeError("the chosen node has no evaluation")     # a bug, not a user error
        return chosen, chosen.result

    def evaluate(self, levels: dict[str, int]) -> NodeResult:
        """One node of the lattice judged against the policy's privacy models (with suppression).

        Args:
            levels: the level of every quasi-identifier, e.g. ``{"zip": 2, "age": 1}``.

        Returns:
            The `NodeResult`: whether the node satisfies the policy, its classes and suppressed rows.

        Raises:
            PolicyError: a quasi-identifier without a level, or a level outside its hierarchy.
        """
        missing = [q for q in self.lattice.names if q not in levels]
        if missing:
            raise PolicyError("node", f"no level given for quasi-identifier '{missing[0]}'")
        for q, h in zip(self.lattice.names, self.lattice.heights):
            lvl = levels[q]
            if not isinstance(lvl, int) or not 0 <= lvl <= h:
                raise PolicyError(f"node.{q}", f"level must be an integer from 0 to {h}; got {lvl!r}")
        return self.checker.evaluate({q: levels[q] for q in self.lattice.names})

    def score_minimal(self, metrics: str = "all") -> list[Candidate]:
        """Every minimal satisfying node with its metrics.

        Args:
            metrics: "all" (the four of `sqlanon.metrics`; KL-divergence costs a query per node), or
                "policy" (only the policy's metric, from the sizes the search already fetched where it can).

        Returns:
            The minimal nodes as `Candidate`s, lowest height first (also kept in `self.candidates`).
        """
        searched = self.searched()
        t = time.perf_counter()
        self.candidates = []
        if metrics == "policy":
            metric = self.policy.utility
            scores = Scorer(metric, self.fs, self.checker, self.lattice).score(list(searched.minimal))
            self.candidates = [Candidate(self.lattice.levels(n), None, {metric: scores[n]})
                               for n in searched.minimal]
        else:
            for node in searched.minimal:
                levels = self.lattice.levels(node)
                res = self.checker.evaluate(levels, known_satisfying=True)
                self.candidates.append(Candidate(levels, res, all_metrics(self.fs, res)))
        self.scored = metrics
        self.timings["metrics"] = time.perf_counter() - t
        return self.candidates

    def choose(self) -> Candidate:
        """The release: the best node by the policy's utility metric among every satisfying node.

        Where the metric is monotone that is the best minimal node; otherwise a branch and bound over
        the lattice (`sqlanon.optimum`). Ties: lower height, then smaller levels in policy order.
        Searches first when `search` has not run.

        Returns:
            The chosen `Candidate` (also `self.chosen`): its levels, evaluation and metrics.

        Raises:
            DataError: no node satisfies the policy.
        """
        if self.result is None and self.optimum is None and self._bounded_search():
            t = time.perf_counter()
            self.optimum = self._bounded_optimum()
        else:
            searched = self.searched()
            if not searched.minimal:
                # a heuristic search that emptied its queue checked or ruled out every node: nothing satisfies
                if any(p.get("phase") == "heuristic" and not p.get("exhausted") for p in searched.per_level):
                    limit = self.policy.search.time_limit_s
                    raise DataError(f"the heuristic search found no satisfying node in {limit:g} s (the lattice has "
                                    f"{self.lattice.size:,} nodes); raise search.time_limit_s, or loosen the privacy "
                                    "models")
                raise DataError(NOTHING_SATISFIES)
            t = time.perf_counter()
            if self.optimum is None:
                self.optimum = find_optimum(self.lattice, self.checker, searched, self.policy.utility, self.progress)
                self.progress.done()
            if not self.candidates:
                self._list_minimal(searched, self.optimum)
        levels = self.lattice.levels(self.optimum.node)
        result = self._evaluate_streamed(levels)
        if result is None:
            result = self.checker.evaluate(levels, known_satisfying=True)
            self._profile_beside_kl(result)
        self.chosen = Candidate(levels, result, all_metrics(self.fs, result))
        self.timings["optimum"] = time.perf_counter() - t
        return self.chosen

    def _bounded_search(self) -> bool:
        """Is the release found by `optimum.bounded_optimum`, without listing every minimal node first?"""
        return self.lattice.size <= self.policy.search.max_nodes and bounded_applies(self.policy.utility,
                                                                                     self.checker)

    def _bounded_optimum(self) -> Optimum:
        self.progress.message(f"lattice of {self.lattice.size:,} nodes ({len(self.lattice.names)} quasi-identifiers): "
                              "optimum search over the nodes that can beat a greedy release")
        try:
            return bounded_optimum(self.lattice, self.checker, self.progress)
        except ValueError:
            raise DataError(NOTHING_SATISFIES) from None
        finally:
            self.progress.done()

    def use_node(self, levels: dict[str, int]) -> Candidate:
        """Choose a given node instead of searching (`sqlanon apply` re-applies a manifest's node).

        Args:
            levels: the level of every quasi-identifier.

        Returns:
            The chosen `Candidate`, whether or not it satisfies the policy (see its `result.satisfied`).
        """
        result = self.evaluate(levels)
        self.optimum = None                  # the manifest says the node was given, not searched for
        self.chosen = Candidate(dict(levels), result, all_metrics(self.fs, result))
        self.candidates = [self.chosen]
        return self.chosen

    # -- release ------------------------------------------------------------------------------
    def materialize(self, companions=(), force: bool = False, manifest_path: Path | None = None) -> list[Output]:
        """Release the chosen node (and `companions`, such as anonymized marginals, in the same transaction),
        with its catalog row holding the manifest. Chooses first when `choose` has not run.

        Args:
            companions: outputs released in the same transaction (`sqlanon.release.Companion`).
            force: an existing export file may be overwritten even when the catalog does not show this
                release wrote it (never the source, the policy or a hierarchy file).
            manifest_path: write the manifest file there too, inside the release's transaction (the release and
                its manifest file both, or neither); without it, `write_manifest` writes it afterwards.

        Returns:
            The outputs written (tables, views, export files), each with its row count.

        Raises:
            ReleaseRefused: a target exists and is not this release's own earlier output.
        """
        _, chosen = self.chosen_result()
        t = time.perf_counter()

        def manifest(outputs: list[Output]) -> dict:
            self.outputs = list(outputs)
            self.timings["release"] = time.perf_counter() - t
            self._manifest = self._build_manifest()
            return self._manifest

        self._manifest = None
        try:
            self.outputs = materialize(self.policy, self.fs, chosen, list(companions),
                                       manifest=manifest, release_id=self.release_id, force=force,
                                       manifest_path=manifest_path)
        except BaseException:
            self.outputs, self._manifest = [], None
            raise
        if not self.outputs:
            self.timings["release"] = time.perf_counter() - t
        return self.outputs

    def sql(self, dialect: str = "duckdb") -> str:
        """The generalizing SELECT of the chosen node, transpiled to `dialect`, as the release runs it: one
        statement over this session's work tables (the staged source and the mapping tables; suppressed blocks'
        codes inline), so it runs only beside them. `sqlanon sql` (`script.release_statement`) writes the
        self-contained script, mapping tables inline.

        Args:
            dialect: a sqlglot dialect: duckdb, postgres, spark, trino, bigquery, snowflake...

        Returns:
            The statement's text.
        """
        return select_sql(self.policy, self.fs, self.chosen_result()[1], dialect=dialect)

    def achieved(self, result: NodeResult) -> dict:
        """Privacy values the released blocks achieve (suppressed blocks left out); see models.profile.
        Past ACHIEVED_DENSE_CELLS (blocks times sensitive values) from sparse counts, a bounded number of
        blocks at a time (`achieved_profile_in_chunks`): the same values, without the whole dense matrix. The
        chosen node's profile, when `choose` computed it beside its evaluation (`_evaluate_streamed`),
        is returned as it was computed there."""
        if self._profiled is not None and self._profiled[0] is result:
            return dict(self._profiled[1])
        keep = self._kept(result)
        names = [s.name for s in self.fs.sensitives]
        if self._in_chunks(result):
            return self._achieved_in_chunks(result, keep, names)
        counts = self.fs.node_counts(result.levels, sensitive=names)
        _same_blocks(counts.block_codes, result)
        return achieved_profile(counts.sizes[keep], {n: counts.sensitive[n][keep] for n in names},
                                {s.name: s.domain for s in self.fs.sensitives}, self.criteria)

    @staticmethod
    def _kept(result: NodeResult) -> np.ndarray:
        return result.ok if result.suppressed_rows else np.ones(len(result.ok), dtype=bool)

    def _in_chunks(self, result: NodeResult) -> bool:
        """Is the node's profile computed from sparse counts, a bounded number of blocks at a time?"""
        return bool(self.fs.sensitives) and self._past_dense_cells(len(result.ok)) and not self.fs.entity and \
            bool(self._kept(result).any())

    def _past_dense_cells(self, blocks: int) -> bool:
        """Do `blocks` blocks by every sensitive attribute's values make more than ACHIEVED_DENSE_CELLS cells?"""
        return blocks * sum(s.domain.size for s in self.fs.sensitives) > ACHIEVED_DENSE_CELLS

    def _evaluate_streamed(self, levels: dict[str, int]) -> NodeResult | None:
        """The chosen node's evaluation, its profile and the sum of c ln c over its (block, value) cells (the
        node-dependent part of its KL-divergence, `NodeResult.kept_xlogx`, which `metrics.kl_divergence` then
        reads instead of its own GROUP BY, `node_kl_terms.sql`), all from one stream of its counts of the one
        sensitive attribute (`FrequencySet.sparse_count_chunks`): the blocks' codes and sizes are the stream's,
        not a query of their own (`node_counts`). Only for a node whose profile is computed in chunks
        (`_in_chunks`, known here from the search's stats of the node), with no suppression budget (every block
        of a satisfying node is then kept), without an entity key or a roll-up in memory; None otherwise. At
        100 M rows of Lands End the stream is the chosen node's 41.3 M (block, value) rows; the GROUP BY of
        `node_kl_terms.sql` took 7.3 s beside it, `node_counts` 1.6 s (ad hoc)."""
        fs = self.fs
        stats = self.checker.stats.get(tuple(levels[n] for n in self.lattice.names))
        if self.checker.budget != 0 or len(fs.sensitives) != 1 or fs.entity or fs.rolled_up() is not None or \
                stats is None or not self._past_dense_cells(stats.classes):
            return None
        name = fs.sensitives[0].name
        codes: list[np.ndarray] = []
        sizes: list[np.ndarray] = []

        def chunks():
            for block_codes, dense in fs.sparse_count_chunks(levels, name, ACHIEVED_DENSE_CELLS):
                codes.append(block_codes)
                sizes.append(dense.sum(axis=1))
                yield sizes[-1], {name: dense}

        profile, cells_xlogx = self._profile_and_xlogx(chunks())
        counts = NodeCounts(np.concatenate(codes), np.concatenate(sizes), {})
        result = self.checker.evaluate(levels, known_satisfying=True, counts=counts)
        result.kept_xlogx = cells_xlogx
        self._profiled = (result, profile)
        return result

    def _profile_beside_kl(self, result: NodeResult) -> None:
        """For a chosen node evaluated on its own (`_evaluate_streamed` did not apply: a suppression budget, or no
        stats of the node) whose profile is streamed (`_streamed_chunks`) and which suppresses nothing: the
        profile computed now, with its KL terms from the same counts, where the GROUP BY of `node_kl_terms.sql`
        would otherwise run (no value known from the search's verdict, no roll-up in memory)."""
        if result.kept_xlogx is not None or result.suppressed_rows or len(self.fs.sensitives) != 1 or \
                not self._in_chunks(result) or self.fs.rolled_up() is not None:
            return
        name = self.fs.sensitives[0].name
        profile, result.kept_xlogx = self._profile_and_xlogx(self._streamed_chunks(result, self._kept(result), name))
        self._profiled = (result, profile)

    def _profile_and_xlogx(self, chunks) -> tuple[dict, float]:
        """The profile of every block of `chunks` ((sizes, {the one sensitive attribute: dense counts}), all the
        node's blocks, none suppressed) and the sum of c ln c over their cells."""
        sensitive = self.fs.sensitives[0]
        cells_xlogx = 0.0

        def counted():
            nonlocal cells_xlogx
            for sizes, counts in chunks:
                cells_xlogx += float(xlogx(counts[sensitive.name]).sum())
                yield sizes, counts

        profile = achieved_profile_in_chunks(None, counted(), {sensitive.name: sensitive.domain}, self.criteria)
        return profile, cells_xlogx

    def _achieved_in_chunks(self, result: NodeResult, keep: np.ndarray, names: list[str]) -> dict:
        domains = {s.name: s.domain for s in self.fs.sensitives}
        if len(names) == 1:
            return achieved_profile_in_chunks(result.counts.sizes[keep], self._streamed_chunks(result, keep, names[0]),
                                              domains, self.criteria)
        sparse = dict(zip(names, self.fs.node_sparse_counts(result.levels, names)))
        _same_blocks(sparse[names[0]].block_codes, result)
        sizes = sparse[names[0]].sizes()
        step = max(1, ACHIEVED_DENSE_CELLS // sum(s.domain.size for s in self.fs.sensitives))

        def chunks():
            for lo in range(0, len(keep), step):
                hi = min(len(keep), lo + step)
                kept = keep[lo:hi]
                if kept.any():
                    yield sizes[lo:hi][kept], {n: sc.dense(lo, hi)[kept] for n, sc in sparse.items()}

        return achieved_profile_in_chunks(sizes[keep], chunks(), domains, self.criteria)

    def _streamed_chunks(self, result: NodeResult, keep: np.ndarray, name: str):
        """(sizes, {name: dense counts}) of the kept blocks, a bounded number at a time, from the node's counts
        as the engine streams them (`FrequencySet.sparse_count_chunks`): one sensitive attribute's counts are
        never all in the process at once. Each chunk's blocks must be the node result's, in its order."""
        done = 0
        for codes, dense in self.fs.sparse_count_chunks(result.levels, name, ACHIEVED_DENSE_CELLS):
            lo, hi = done, done + len(codes)
            if not np.array_equal(codes, result.counts.block_codes[lo:hi]):
                raise RuntimeError("node queries returned blocks in different orders")  # a bug, not user error
            done = hi
            kept = keep[lo:hi]
            if kept.any():
                yield dense.sum(axis=1)[kept], {name: dense[kept]}
        if done != len(keep):
            raise RuntimeError("node queries returned blocks in different orders")

    def manifest(self) -> dict:
        """The release manifest: once released, exactly the JSON of its catalog row (sqlanon_releases),
        unless outputs were added since (marginals released on their own): then rebuilt with them.

        Returns:
            The manifest as a dict: the policy, the chosen node, its metrics, the privacy achieved, the
            hierarchies' digests, the outputs (docs/DESIGN.md section 3.3).
        """
        if self._manifest is not None and self._manifest["outputs"] == [o.as_dict() for o in self.outputs]:
            return copy.deepcopy(self._manifest)
        return self._build_manifest()

    def default_manifest_path(self) -> Path:
        """`<release>.manifest.json` beside the DuckDB database file; beside the policy file (or in the
        working folder for a policy given as a dict) when the database is not a file (in memory,
        PostgreSQL, Spark). A release name is a relation's, not a path: its '/' and '\\' are written %2F and
        %5C (and '%' as %25), so that `sub/rel` is not a file in a folder sub that may not exist (the release was
        written, then the manifest failed with a traceback) and `/rel` not a file at the root."""
        where = self.backend.path.resolve().parent if self.backend.path else Path(self.policy.base_dir)
        name = self.policy.release.name
        for char, code in (("%", "%25"), ("/", "%2F"), ("\\", "%5C")):
            name = name.replace(char, code)
        return where / f"{name}.manifest.json"

    def write_manifest(self, path: Path | str | None = None) -> Path:
        """Write the manifest as JSON (to a temporary file renamed into place); default
        `default_manifest_path()`. Returns the path."""

        from .catalog import strict_json
        path = Path(path) if path is not None else self.default_manifest_path()
        text = strict_json(self.manifest())
        from .files import write_atomically
        write_atomically(path, text + "\n")
        return path

    def _build_manifest(self) -> dict:
        c, result = self.chosen_result()
        return {
            "sqlanon_version": __version__,
            "release_id": self.release_id,
            "policy_sha256": policy_hash(self.policy.normalized()),
            "policy": self.policy.normalized(),
            "policy_dir": str(self.policy.base_dir),
            "database": str(self.backend.path) if self.backend.path else None,
            "source": {"table": self.policy.source.label, "rows": self.fs.rows},
            "lattice": {"nodes": self.lattice.size, "evaluated": self._evaluated(),
                        "heights": dict(zip(self.lattice.names, self.lattice.heights)),
                        # None: the release came from the bounded optimum search, which does not list them
                        "minimal": [m.as_dict() for m in self.candidates] if self.result is not None else None,
                        "minimal_metrics": self.scored or None},
            "search": self.optimum.as_dict() if self.optimum else {"method": "given node", "proven_optimal": None},
            "chosen": {"levels": dict(c.levels), "classes": result.classes,
                       "suppressed_rows": result.suppressed_rows, "metrics": dict(c.metrics)},
            "privacy": self.achieved(result),
            "hierarchies": {q.name: {"source": q.hierarchy.source, "height": q.height,
                                     "sha256_16": q.hierarchy.digest()} for q in self.fs.qis},
            "release_sql_sha256": hashlib.sha256(self.sql().encode()).hexdigest(),
            "sampling_seed": None,
            "outputs": [o.as_dict() for o in self.outputs],
            "timings_s": {k: round(v, 4) for k, v in self.timings.items()},
            **copy.deepcopy(self.manifest_extra),
        }

    def _evaluated(self) -> int:
        """Nodes the run evaluated: its search's count, the bounded optimum search's, or 1 (a given node)."""
        if self.result is not None:
            return self.result.evaluated
        if self.optimum is not None and self.optimum.evaluated is not None:
            return self.optimum.evaluated
        return 1

    def report(self, path, external: bool = False, **options) -> Path:
        """Write the release report, a self-contained HTML page, for the chosen node (see `sqlanon.report`):
        `external=True` leaves out what reveals small cells; options: min_cell, threshold, groups, group_level."""
        from .report import write_report
        return write_report(self, path, external=external, **options)

    def close(self) -> None:
        self.backend.close()
