"""`sqlanon apply`: the same transformation as a past release, on new rows of the same schema.

The manifest holds the normalized policy, the folder its relative paths start from, the chosen
levels and a hash of each hierarchy. Applying rebuilds the mapping tables from the same hierarchies
(a taxonomy file whose hash changed is refused: that would be another transformation), evaluates the
recorded node on the new rows, and releases only if every privacy model of the policy still holds
within the suppression budget; otherwise it raises `PrivacyNotMet` (exit code 3) and writes nothing.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

from . import files
from .anonymizer import Anonymization
from .errors import PolicyError, PrivacyNotMet
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
    run = Anonymization(load_policy(raw, base_dir=base_dir), db=db)
    try:
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


def apply_manifest(manifest_path, new_source: str, db=None, name: str | None = None) -> Anonymization:
    run = open_manifest(manifest_path, new_source, db=db, name=name)
    try:
        chosen = run.chosen
        if not chosen.result.satisfied:
            failing = int((~chosen.result.ok).sum())
            raise PrivacyNotMet(
                f"the new rows do not satisfy the policy at {chosen.levels}: {failing} classes fail "
                f"({chosen.result.suppressed_rows} rows, budget {run.checker.budget}); nothing was released")
        run.materialize()
    except BaseException:
        run.close()
        raise
    return run
