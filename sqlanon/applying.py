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
from .anonymizer import Anonymization
from .catalog import CATALOG, Catalog, ReleaseRefused, policy_hash, release_name
from .errors import DataError, PolicyError, PrivacyNotMet, UnknownValues
from .hierarchy import spec_kind
from .policy import load_policy, source_with_table


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
    if entry is None and not release_id:
        name = release_name(manifest)
        entry = catalog.latest_release(name) if name else None
    if entry is not None and entry.policy_sha256 and entry.policy_sha256 != actual:
        raise ReleaseRefused(f"manifest {path} does not match release {entry.name} in {CATALOG} of "
                             f"{backend.describe()}: its policy hashes to {actual[:12]}, the release was made with "
                             f"{entry.policy_sha256[:12]}; it was edited after sqlanon wrote it (the catalog row "
                             "holds the original)")


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
    db = db or manifest.get("database") or ":memory:"
    try:
        run = Anonymization(load_policy(raw, base_dir=base_dir), db=db)
    except UnknownValues as e:
        raise unknown_values_refused(e) from None
    try:
        check_manifest(manifest, manifest_path, run.backend)
        for q in run.fs.qis:
            spec = run.policy.quasi_identifiers[q.name]
            recorded = manifest["hierarchies"].get(q.name, {}).get("sha256_16")
            if spec_kind(spec, q.name) == "taxonomy" and recorded != q.hierarchy.digest():
                raise PolicyError(f"quasi_identifiers.{q.name}.hierarchy",
                                  f"{q.hierarchy.source} changed since the manifest was written (hash "
                                  f"{q.hierarchy.digest()} != {recorded}); applying it would be another transformation")
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
    chosen = run.chosen
    if not chosen.result.satisfied:
        failing = int((~chosen.result.ok).sum())
        raise PrivacyNotMet(
            f"the new rows do not satisfy the policy at {chosen.levels}: {failing} classes fail "
            f"({chosen.result.suppressed_rows} rows, budget {run.checker.budget}); nothing was released")


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
