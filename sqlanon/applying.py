"""`sqlanon apply`: the same transformation as a past release, on new rows of the same schema.

The manifest holds the normalized policy, the folder its relative paths start from, the chosen
levels and a hash of each hierarchy. Applying rebuilds the mapping tables from the same hierarchies
(a taxonomy file whose hash changed is refused: that would be another transformation), evaluates the
recorded node on the new rows, and releases only if every privacy model of the policy still holds
within the suppression budget; otherwise it raises `PrivacyNotMet` (exit code 3) and writes nothing.

A manifest is checked before it is used (`check_manifest`): its policy must hash to the value it records
(`policy_sha256`), and, when the database it names (or --db) holds the release catalog, to the value of
the catalog row of the run that wrote it (`release_id`; a manifest without one is compared with the
newest release of its name). An edited manifest (k lowered, say) is refused with exit code 2: it would
apply a transformation nobody released.

The other readers of a manifest live here too: `view_status` (`sqlanon status`: the drift of a view
release) and `report_from_manifest` (`sqlanon report MANIFEST`: the release report recomputed).
New rows holding a quasi-identifier value that the manifest's hierarchy does not hold are refused (exit
code 2, `unknown_values_refused`), by choice: a view release shows such values at the hierarchy's top
(sqlanon/views.py), but `apply` releases exactly the recorded transformation, and a value outside the
recorded hierarchies has none. The fix is the hierarchy's: add the values and anonymize again.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

from . import files
from .anonymizer import Anonymization, Candidate
from .catalog import CATALOG, Catalog, ReleaseRefused, column_named, policy_hash, release_name
from .errors import DataError, MissingColumn, PolicyError, PrivacyNotMet, UnknownValues
from .hierarchy import spec_kind
from .metrics import all_metrics
from .policy import load_policy, source_with_table
from .report import check_report_target, write_report


def _read_manifest(path) -> dict:
    text = files.read_text(path, "MANIFEST", "manifest", files.MANIFEST_LIMIT)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise PolicyError("MANIFEST", f"{path} is not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict):
        raise PolicyError("MANIFEST", f"{path} holds a JSON {type(data).__name__}, not a manifest; give a manifest "
                          "written by sqlanon anonymize --json")
    for key in ("policy", "chosen", "hierarchies"):
        if key not in data:
            raise PolicyError(f"MANIFEST.{key}", f"missing from {path}; give a manifest written by sqlanon "
                              "anonymize --json")
    _check_manifest_shape(data, path)
    return data


def check_manifest(manifest: dict, path, backend=None) -> None:
    """Refuse (exit 2) a manifest whose policy is not the one sqlanon recorded: against its own
    `policy_sha256`, and against the release catalog of `backend`'s database when there is one."""
    actual = policy_hash(manifest["policy"])
    recorded = manifest.get("policy_sha256")
    if recorded is not None and recorded != actual:
        raise ReleaseRefused(f"manifest {path} was edited after sqlanon wrote it: its policy hashes to "
                             f"{actual[:12]}, it records {str(recorded)[:12]}; use the manifest sqlanon wrote")
    if backend is None:
        return
    catalog = Catalog(backend)
    if not catalog.exists():
        return
    release_id = manifest.get("release_id")
    entry = catalog.release(release_id) if release_id else None
    # no release_id, or one this catalog never recorded (a forged one skipped every check): the newest release
    # of its name
    unknown_id = bool(release_id) and entry is None
    if entry is None:
        name = release_name(manifest)
        entry = catalog.latest_release(name) if name else None
    if entry is None:
        return
    why = (f"its release_id {release_id} is not in that catalog, and the release of its name there differs (give "
           "that release's manifest, or --db the database its own release is in)" if unknown_id else
           "it was edited after sqlanon wrote it (the catalog row holds the original)")
    if entry.policy_sha256 and entry.policy_sha256 != actual:
        raise ReleaseRefused(f"manifest {path} does not match release {entry.name} in {CATALOG} of "
                             f"{backend.describe()}: its policy hashes to {actual[:12]}, the release was made with "
                             f"{entry.policy_sha256[:12]}; {why}")
    # the node is not in the policy's hash: the catalog row records the one released
    node = json.loads(entry.node) if entry.node else None
    if node is not None and node != manifest["chosen"].get("levels"):
        raise ReleaseRefused(f"manifest {path} does not match release {entry.name} in {CATALOG} of "
                             f"{backend.describe()}: it records the node {manifest['chosen'].get('levels')}, the "
                             f"release was made at {node}; {why}")


def _check_manifest_shape(data: dict, path) -> None:
    """The fields a manifest's reader indexes into have the shapes sqlanon writes (an edited or truncated
    manifest is a PolicyError naming the field, not a KeyError or TypeError)."""
    def bad(field: str, what: str, value) -> PolicyError:
        return PolicyError(f"MANIFEST.{field}", f"in {path} must be {what}; got {json.dumps(value)[:80]}: give a "
                           "manifest written by sqlanon anonymize --json")
    for key in ("policy", "chosen", "hierarchies"):
        if not isinstance(data[key], dict):
            raise bad(key, "a mapping", data[key])
    if not isinstance(data["policy"].get("source"), dict):
        raise bad("policy.source", "a mapping", data["policy"].get("source"))
    levels = data["chosen"].get("levels")
    if not isinstance(levels, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                               for k, v in levels.items()):
        raise bad("chosen.levels", "a mapping of quasi-identifier -> level", levels)
    for name, h in data["hierarchies"].items():
        if not isinstance(h, dict):
            raise bad(f"hierarchies.{name}", "a mapping (source, height, hash)", h)
    for key in ("policy_dir", "database"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise bad(key, "a path", data[key])


def open_manifest(manifest_path, new_source: str | None = None, db=None, name: str | None = None) -> Anonymization:
    """A run at a manifest's recorded node, without searching: the same policy and hierarchies (a taxonomy
    whose hash changed is refused), on the manifest's source or on `new_source` (a table of the same engine,
    or a .csv / .parquet file). The node is evaluated, not yet released."""
    manifest = _read_manifest(manifest_path)
    check_manifest(manifest, manifest_path)
    raw = copy.deepcopy(manifest["policy"])
    base_dir = Path(manifest.get("policy_dir") or Path(manifest_path).resolve().parent)
    if new_source is not None:
        suffix = Path(new_source).suffix.lower()
        if suffix in (".csv", ".parquet"):
            raw["source"] = {suffix[1:]: str(Path(new_source).resolve()), "table": Path(new_source).stem}
        else:
            raw["source"] = source_with_table(raw.get("source"), new_source)   # same engine and connection
    if name:
        raw.setdefault("release", {})["name"] = name
    db = db or recorded_database(manifest, manifest_path) or ":memory:"
    policy = load_policy(raw, base_dir=base_dir)
    policy.origin = f"the manifest {manifest_path}"
    try:
        run = Anonymization(policy, db=db)
    except UnknownValues as e:
        raise unknown_values_refused(e) from None
    except MissingColumn as e:
        if new_source is None:
            raise
        # the new rows' schema is at fault, not the manifest's policy
        raise DataError(f"column '{e.column}' ({e.field} of the manifest's policy) is not in the new rows "
                        f"{new_source} (their columns: {', '.join(e.columns[:20])}); apply needs the columns the "
                        "release was made from: give rows of that schema") from None
    try:
        check_manifest(manifest, manifest_path, run.backend)
        for q in run.fs.qis:
            spec = run.policy.quasi_identifiers[q.name]
            recorded = manifest["hierarchies"].get(q.name, {}).get("sha256_16")
            if spec_kind(spec, q.name) == "taxonomy" and recorded != q.hierarchy.digest():
                raise PolicyError(f"quasi_identifiers.{q.name}.hierarchy",
                                  f"{q.hierarchy.source} changed since the manifest was written (hash "
                                  f"{q.hierarchy.digest()} != {recorded}); applying it would be another transformation")
            # a hierarchy built from the data (a mask's levels follow the longest value) may have other levels on
            # these rows: the recorded level would then mean another generalization (level 5 of 'mask 5', the
            # top, became a mask of 5 of 6 characters and published a digit)
            height = manifest["hierarchies"].get(q.name, {}).get("height")
            if isinstance(height, int) and height != q.height:
                raise PolicyError(f"quasi_identifiers.{q.name}.hierarchy",
                                  f"built from these rows, the hierarchy of '{q.name}' ({q.hierarchy.source}) has "
                                  f"{q.height} levels where the manifest's had {height}, so its recorded level "
                                  "would be another generalization; anonymize these rows instead")
        run.use_node(manifest["chosen"]["levels"])
    except BaseException:
        run.close()
        raise
    return run


def unknown_values_refused(e: UnknownValues) -> DataError:
    """Why `apply` refuses new rows holding values the manifest's hierarchies do not hold (exit 2), where a
    view release shows them at the hierarchy's top: applying releases exactly the recorded transformation
    (the hierarchies it hashes), and a value outside them has no recorded generalization. Releasing it at
    the top would be a new transformation the manifest does not describe."""
    shown = ", ".join(repr(v) for v in e.values[:5])
    more = f" and {len(e.values) - 5} more" if len(e.values) > 5 else ""
    return DataError(f"column '{e.column}': {len(e.values)} value(s) {shown}{more} of the new rows are not in the "
                     f"hierarchy of '{e.column}' ({e.hierarchy}) that the manifest records; apply releases only the "
                     "recorded transformation: add them to the hierarchy and run sqlanon anonymize again (a view "
                     "release, materialize: view, shows such values at the hierarchy's top)")


def require_satisfied(run: Anonymization) -> None:
    """PrivacyNotMet (exit 3) unless the recorded node satisfies every privacy model on the new rows."""
    chosen, result = run.chosen_result()
    if not result.satisfied:
        failing = int((~result.ok).sum())
        raise PrivacyNotMet(
            f"the new rows do not satisfy the policy at {chosen.levels}: {failing} classes fail "
            f"({result.suppressed_rows} rows, budget {run.checker.budget}); nothing was released")


def apply_manifest(manifest_path, new_source: str, db=None, name: str | None = None,
                   force: bool = False) -> Anonymization:
    run = open_manifest(manifest_path, new_source, db=db, name=name)
    try:
        require_satisfied(run)
        run.materialize(force=force)
    except BaseException:
        run.close()
        raise
    return run


def get_manifest(release: str | Path, backend=None) -> dict:
    """The manifest of a release: a manifest file's path today. Later also a release name looked up in the
    target database's release catalog through `backend` (one place to change)."""
    path = Path(release)
    if path.suffix.lower() == ".json" or path.exists() or backend is None:
        return _read_manifest(path)
    raise PolicyError("MANIFEST", f"{release} is not a manifest file; give the path of a manifest written by "
                      "sqlanon anonymize --json")


def view_status(manifest_path, db=None, renode: bool | None = None) -> dict:
    """The drift of a view release against its manifest: its coverage now, and (when `renode`, default:
    the policy's ``release.drift.renode``) whether a new search on the live source would choose another node."""
    from .anonymizer import default_db
    from .engine import open_backend
    from .progress import Progress
    from .views import coverage, drift_verdict
    manifest = get_manifest(manifest_path)
    check_manifest(manifest, manifest_path)     # an edited drift limit would pass a drifted view
    views = [o for o in manifest.get("outputs", []) if o.get("kind") == "view"]
    if not views:
        raise PolicyError("MANIFEST.outputs", f"{manifest_path} records no view release; status measures view "
                          "releases (release.materialize: view)")
    name = views[0]["name"]
    released = dict(manifest["chosen"]["levels"])
    base_dir = Path(manifest.get("policy_dir") or Path(manifest_path).resolve().parent)
    policy = load_policy(manifest["policy"], base_dir=base_dir)
    limits = policy.release.drift
    db = db or recorded_database(manifest, manifest_path) or default_db(policy)
    backend = open_backend(policy.source, db)
    try:
        check_manifest(manifest, manifest_path, backend)
        current = Catalog(backend).latest_release(name)      # None without a catalog
        if current is not None and manifest.get("release_id") and current.release_id != manifest["release_id"]:
            # an earlier release's limits and node would judge the view released since
            raise ReleaseRefused(f"manifest {manifest_path} is of an earlier release of the view {name} (release_id "
                                 f"{manifest['release_id']}); the view now is release_id {current.release_id}: give "
                                 "the manifest of that release")
        source = backend.view_source(policy.source)
        if source is None or backend.relation_kind(name) != "VIEW":
            raise PolicyError("MANIFEST.outputs", f"the view {name} is not in {backend.describe()}; give the "
                              "release's database with --db")
        # a view of that name made since by someone else: its rows are no release's (coverage would count the
        # source's rows it does not show as suppressed)
        have = [c for c, _ in backend.columns(name)]
        lacking = [c for c in (*policy.quasi_identifiers, *policy.sensitive) if column_named(backend, have, c) is None]
        if lacking:
            raise ReleaseRefused(f"the view {name} is not the view sqlanon released (it has no column '{lacking[0]}'): "
                                 "it was replaced since; release again, or give the release's database with --db")
        maps = [(q, f"{name}__map_{i}") for i, q in enumerate(policy.quasi_identifiers)]
        cov = coverage(backend, name, source, maps)
    finally:
        backend.close()
    found: dict | None = None
    if limits["renode"] if renode is None else renode:
        # a new search over the live source; values unknown to a hierarchy file stop it: that is drift too
        # (the hierarchy needs those values before anything can be re-released)
        try:
            with Anonymization(policy, db=db, progress=Progress(enabled=False)) as run:
                run.search()
                found = {"levels": dict(run.choose().levels), "released": released}
        except DataError as e:
            found = {"levels": None, "released": released, "error": str(e)}
    reasons = drift_verdict(cov, limits, found)
    out = {"release": name, "manifest": str(manifest_path), "released_levels": released, **cov,
           "limits": limits, "drifted": bool(reasons), "reasons": reasons}
    if found is not None:
        out["new_levels"] = found["levels"]
        if found.get("error"):
            out["renode_error"] = found["error"]
    return out


def _check_against_catalog(manifest: dict, manifest_path, db) -> None:
    """`check_manifest` against the catalog of the release's database (the manifest's, or `db`), where it is a
    file or a server that exists: a report on an edited node would describe a release nobody made."""
    from .anonymizer import default_db
    from .engine import open_backend
    check_manifest(manifest, manifest_path)
    base_dir = Path(manifest.get("policy_dir") or Path(manifest_path).resolve().parent)
    policy = load_policy(manifest["policy"], base_dir=base_dir)
    database = db or recorded_database(manifest, manifest_path) or default_db(policy)
    if policy.source.engine == "duckdb" and not (database and Path(database).is_file()):
        return          # no database file: no catalog to compare with
    backend = open_backend(policy.source, database)
    try:
        check_manifest(manifest, manifest_path, backend)
    finally:
        backend.close()


def _manifest_view_coverage(manifest_path, db) -> dict | None:
    """The same for a manifest's view release, read in the release's database (None for a table release)."""
    try:
        return view_status(manifest_path, db=db, renode=False)
    except ReleaseRefused:
        raise                   # an edited manifest: refused, not reported without its view
    except (PolicyError, DataError):
        return None


# --------------------------------------------------------------------------------------------------
# from a manifest

def recorded_database(manifest: dict, manifest_path) -> str | None:
    """The manifest's `database` as a path to open: as written when it exists from here (or is absolute), else
    beside the manifest (sqlanon writes it as it was given, relative to where sqlanon ran). None when it
    records none. From another folder the relative path named another file: `sql` and `apply` opened (or
    created) it, and the checks against the release catalog looked for it there."""
    recorded = manifest.get("database")
    if not recorded:
        return None
    path = Path(recorded)
    if not path.is_absolute() and not path.exists():
        beside = Path(manifest_path).resolve().parent / path
        if beside.exists():
            return str(beside)
    return recorded


def _database_for(manifest: dict, manifest_path: Path, db) -> Path | None:
    """`db`, or the manifest's database (`recorded_database`), which must exist; None when neither is given."""
    given = db if db is not None else recorded_database(manifest, manifest_path)
    if given is None:
        return None
    path = Path(given)
    if not path.exists():
        raise DataError(f"database {path} (the manifest's release database, holding the source table) does not "
                        "exist; give --db")
    return path.resolve()


def open_manifest_run(manifest_path, db=None, progress=None) -> tuple[Anonymization, dict, list[str]]:
    """The manifest's policy and hierarchies on the data as it is now, searched, with the manifest's node
    chosen; and warnings where the data or hierarchies differ from what the manifest recorded.

    The source is only read: a DuckDB table source is attached read-only into an in-memory database
    (the manifest's `database` when the policy names none), files through DuckDB's readers.
    """
    manifest_path = Path(manifest_path)
    manifest = _read_manifest(manifest_path)      # checked by its caller (`report_from_manifest`)
    raw = copy.deepcopy(manifest["policy"])
    base_dir = Path(manifest.get("policy_dir") or manifest_path.resolve().parent)
    source = dict(raw.get("source") or {})
    if source.get("engine", "duckdb") == "duckdb" and "table" in source and not any(
            k in source for k in ("database", "csv", "parquet", "query")):
        database = _database_for(manifest, manifest_path, db)
        if database is not None:
            source["database"] = str(database)
            raw["source"] = source
    levels = manifest["chosen"].get("levels")
    if not isinstance(levels, dict):
        raise PolicyError("MANIFEST.chosen.levels", f"missing from {manifest_path}")
    run = Anonymization(load_policy(raw, base_dir=base_dir), db=":memory:", progress=progress)
    try:
        warnings = []
        for q in run.fs.qis:
            recorded = manifest["hierarchies"].get(q.name, {}).get("sha256_16")
            if recorded and recorded != q.hierarchy.digest():
                warnings.append(f"the hierarchy of {q.name} ({q.hierarchy.source}) differs from the one the manifest "
                                "recorded: this report describes the hierarchy as it is now")
        recorded_rows = (manifest.get("source") or {}).get("rows")
        if recorded_rows is not None and recorded_rows != run.fs.rows:
            warnings.append("the source's size differs from the one the manifest recorded: this report describes "
                            "the data as it is now")
        run.search()
        run.progress.done()
        run.score_minimal()
        node = run.evaluate(levels)      # checks the levels against the lattice (one line, exit 2, if bad)
        match = [c for c in run.candidates if c.levels == {q: levels[q] for q in run.lattice.names}]
        run.chosen = match[0] if match else Candidate(dict(node.levels), node, all_metrics(run.fs, node))
    except BaseException:
        run.close()
        raise
    return run, manifest, warnings


def report_from_manifest(manifest_path, out=None, external: bool = False, db=None, progress=None,
                         force: bool = False, **options) -> Path:
    """`sqlanon report MANIFEST`: recompute the release's report from its manifest and write it.

    `out` defaults to the manifest's name with .html (.external.html for an external report).
    """
    manifest_path = Path(manifest_path)
    if out is None:
        out = manifest_path.with_suffix(".external.html" if external else ".html")
    manifest = _read_manifest(manifest_path)
    # checked before the (long) recomputation, and again by write_report with the run's own files
    protected = {manifest_path.resolve(): "the manifest"}
    database = recorded_database(manifest, manifest_path) if db is None else db
    if database:
        protected[Path(database).resolve()] = "the release's database"
    check_report_target(out, protected, force)
    _check_against_catalog(manifest, manifest_path, db)
    view = _manifest_view_coverage(manifest_path, db)    # before the run attaches the database read-only
    run, _, warnings = open_manifest_run(manifest_path, db, progress)
    with run:
        return write_report(run, out, external=external, warnings=warnings, manifest_path=str(manifest_path),
                            view=view, force=force, protected=protected, **options)
