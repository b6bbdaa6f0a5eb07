"""`sqlanon dbt`: a release as a dbt model, with schema tests that fail when it stops satisfying the policy.

Into a dbt project (a folder holding dbt_project.yml) it writes:

- ``<model-path>/sqlanon/<release>.sql``: the release SELECT of `sqlanon.script` (mapping tables inline as
  VALUES CTEs, the suppressed classes' codes inline), reading the source through ``{{ source(...) }}``,
  materialized as the policy's ``release.materialize`` says (table or view; ``none`` gives a table:
  asking for a dbt model is asking for a release). Mapping tables are inline rather than seeds: the
  model is one file that needs no ``dbt seed``, no column types for CSV inference to guess (a label such
  as ``01`` stays text), and it is the very statement `sqlanon sql` prints, tested on three engines.
  The SQL text is wrapped in ``{% raw %}`` blocks so that no hierarchy label is read as Jinja.
- ``<model-path>/sqlanon/<release>.yml``: the source (its schema: ``--source-schema``, default the
  target's) and the model with one generic test per privacy model of the policy, plus the suppression
  budget;
- ``<macro-path>/sqlanon_tests.sql``: the generic tests (`sql_templates/dbt/sqlanon_tests.sql`), each
  returning the classes that break its model;
- ``.sqlanon-dbt.json``: which files sqlanon wrote and their hashes. A file is (re)written only when it
  does not exist, or when this marker lists it and it is unchanged since: a file sqlanon did not write,
  or one edited since, is never overwritten (one line, exit 2, nothing written).

Tested models: k-anonymity, distinct / entropy / recursive (c,l)-diversity, t-closeness with the equal
or ordered distance. Policies using the others (don't-care sets, npd-recursive, the hierarchical
distance, multi-attribute l-diversity) are refused rather than given tests that would not check them.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import yaml
from sqlglot import exp

from . import templates
from .errors import PolicyError, UserError
from .files import missing_folders, remove_temporaries, write_atomically, write_temporary
from .models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from .release import release_columns
from .script import release_statement

MARKER = ".sqlanon-dbt.json"
MACRO_FILE = "sqlanon_tests.sql"
_SOURCE_PLACEHOLDER = "__sqlanon_dbt_source__"
_DBT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _project_paths(project: Path) -> tuple[Path, Path]:
    """The first model path and macro path of dbt_project.yml (dbt's defaults: models, macros)."""
    conf_file = project / "dbt_project.yml"
    if not conf_file.is_file():
        raise UserError(f"--project: {project} has no dbt_project.yml; give the folder of a dbt project "
                        "(dbt init creates one)")
    try:
        conf = yaml.safe_load(conf_file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise UserError(f"--project: {conf_file} is not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(conf, dict):
        raise UserError(f"--project: {conf_file} holds a YAML {type(conf).__name__}, not a dbt project's mapping; "
                        "give the folder of a dbt project")
    return _project_path(project, conf, "model-paths", "models"), _project_path(project, conf, "macro-paths", "macros")


def _project_path(project: Path, conf: dict, key: str, default: str) -> Path:
    """The first folder of `key` in dbt_project.yml: a list of folders inside the project, as dbt requires (a
    string was read letter by letter; an absolute path or ../ wrote outside the project)."""
    paths = conf.get(key) or [default]
    if not isinstance(paths, list) or not all(isinstance(x, str) and x for x in paths):
        raise UserError(f"--project: {key} in {project / 'dbt_project.yml'} must be a list of folders (dbt's "
                        f"form: {key}: [\"{default}\"]); got {json.dumps(paths)[:80]}")
    # read as written, not resolved: a folder the user links elsewhere (models -> ../shared) is theirs to link
    if Path(paths[0]).is_absolute() or ".." in Path(paths[0]).parts:
        raise UserError(f"--project: {key} {paths[0]!r} in {project / 'dbt_project.yml'} is not inside the project; "
                        "sqlanon dbt writes only inside it")
    return project / paths[0]


def _dbt_name(value: str, field: str) -> str:
    if not _DBT_NAME.match(value or ""):
        raise PolicyError(field, f"{value!r} is not a name dbt accepts for a model or source (letters, digits, _; "
                          "not starting with a digit); rename it")
    return value


def _raw(sql: str) -> str:
    if re.search(r"end\s*raw", sql, flags=re.IGNORECASE):
        raise PolicyError("quasi_identifiers", "a hierarchy label contains 'endraw', which a dbt model cannot "
                          "carry inside a raw block; rename that label")
    return "{% raw %}" + sql + "{% endraw %}"


def model_sql(run, dialect: str, source_name: str, table: str) -> str:
    """The dbt model: config, then the release SELECT with the source read through {{ source() }}."""
    kind = run.policy.release.materialize
    materialized = "view" if kind == "view" else "table"
    sql = release_statement(run, dialect, source=_SOURCE_PLACEHOLDER)
    quoted = exp.to_identifier(_SOURCE_PLACEHOLDER, quoted=True).sql(dialect=dialect)
    parts = sql.split(quoted)
    if len(parts) != 2:       # the placeholder must be the one table the SELECT reads, not inside a label
        raise PolicyError("quasi_identifiers", f"a hierarchy label contains {_SOURCE_PLACEHOLDER}; rename it")
    call = "{{ source(" + json.dumps(source_name) + ", " + json.dumps(table) + ") }}"
    levels = ", ".join(f"{k}={v}" for k, v in run.chosen.levels.items())
    header = (f"-- written by sqlanon dbt: the release of {run.policy.described} at {levels}; regenerate, "
              "do not edit\n")
    return (f"{{{{ config(materialized='{materialized}') }}}}\n"
            + _raw(header + parts[0]) + call + _raw(parts[1]) + "\n")


def _criterion_tests(run, qis: list[str], source_ref: str) -> list[dict]:
    """One generic test per privacy model (with its parameters), and the suppression budget."""
    entity = run.policy.entity_key
    base = {"quasi_identifiers": qis}
    if entity:
        base["entity_key"] = entity
    out = []
    for crit in run.checker.criteria:
        if getattr(crit, "multi_attribute", False):
            raise PolicyError("privacy.l_diversity.attribute", "multi-attribute l-diversity has no dbt test yet; "
                              "name one sensitive attribute, or use sqlanon check in the schedule")
        if isinstance(crit, KAnonymity):
            out.append({"sqlanon_k_anonymity": {**base, "k": crit.k}})
        elif isinstance(crit, DistinctLDiversity):
            out.append({"sqlanon_l_diversity": {**base, "sensitive": crit.sensitive, "variant": "distinct",
                                                "l": crit.l}})
        elif isinstance(crit, EntropyLDiversity) and not crit.dont_care_codes:
            out.append({"sqlanon_l_diversity": {**base, "sensitive": crit.sensitive, "variant": "entropy",
                                                "l": crit.l}})
        elif isinstance(crit, RecursiveCLDiversity) and not crit.dont_care_codes and crit.npd is None:
            out.append({"sqlanon_l_diversity": {**base, "sensitive": crit.sensitive, "variant": "recursive",
                                                "l": crit.l, "c": crit.c}})
        elif isinstance(crit, TCloseness) and crit.distance in ("equal", "ordered"):
            out.append({"sqlanon_t_closeness": {**base, "sensitive": crit.sensitive, "t": crit.t,
                                                "distance": crit.distance, "source_relation": source_ref}})
        else:
            field = _policy_field(crit)
            raise PolicyError(field, f"{crit.name} has no dbt test yet (tested: k, distinct / entropy / recursive "
                              "l-diversity without don't-care or negative-disclosure sets, t-closeness with the "
                              "equal or ordered distance); use sqlanon check in the schedule")
    budget = {"source_relation": source_ref, "max_suppression": run.policy.max_suppression}
    if entity:
        budget["entity_key"] = entity
    out.append({"sqlanon_suppression": budget})
    return out


def _policy_field(crit) -> str:
    """The policy field a privacy model without a dbt test comes from: its key under `privacy` (its name with
    '-' written '_': k-map, delta-presence), the distance of a t-closeness, l_diversity for the l-diversity
    family (an average_risk was said to be privacy.l_diversity)."""
    if isinstance(crit, TCloseness):
        return "privacy.t_closeness.distance"
    if crit.name.endswith("-diversity"):
        return "privacy.l_diversity"
    return "privacy." + crit.name.replace("-", "_")


def schema_yml(run, source_name: str, table: str, source_schema: str | None) -> str:
    policy = run.policy
    columns = release_columns(policy, run.fs, run.chosen.levels)
    qis = [c for c, q, _ in columns if q is not None]
    released = [c for c, _, _ in columns]
    if policy.entity_key and policy.entity_key not in released:
        raise PolicyError("release.keep", f"the dbt tests count persons by entity_key '{policy.entity_key}': "
                          "add it to release.keep so the model carries it")
    source_ref = "{{ source(" + json.dumps(source_name) + ", " + json.dumps(table) + ") }}"
    doc = {
        "version": 2,
        "sources": [{"name": source_name, "schema": source_schema or "{{ target.schema }}",
                     "description": "The table sqlanon's release reads (written by sqlanon dbt).",
                     "tables": [{"name": table}]}],
        "models": [{"name": policy.release.name,
                    "description": "sqlanon release: each quasi-identifier generalized to its label at the chosen "
                                   "level, suppressed classes left out (written by sqlanon dbt).",
                    "data_tests": _criterion_tests(run, qis, source_ref)}],
    }
    return "# written by sqlanon dbt; regenerate, do not edit\n" + yaml.dump(doc, Dumper=_NoAliases, sort_keys=False,
                                                                              width=1000)


class _NoAliases(yaml.SafeDumper):
    """Each test spells its column list out (no YAML anchors: the file is for people to read)."""

    def ignore_aliases(self, data) -> bool:
        return True


def macro_text() -> str:
    return templates.template_dir().joinpath("dbt", MACRO_FILE).read_text(encoding="utf-8")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_marker(project: Path) -> dict[str, str]:
    path = project / MARKER
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files = data["files"]
        if data.get("written_by") != "sqlanon dbt" or not isinstance(files, dict):
            raise ValueError
    except (ValueError, KeyError, TypeError, OSError):
        raise UserError(f"--project: {path} was not written by sqlanon dbt; move it away") from None
    return {str(k): str(v) for k, v in files.items()}


def write_project(run, project, dialect: str, source_table: str | None = None,
                  source_schema: str | None = None) -> list[Path]:
    """Write the model, its schema file and the test macros into `project`; return the files written.

    Every file is checked before anything is written: one sqlanon did not write (or that was edited since)
    stops the run with a UserError and nothing changes."""
    project = Path(project)
    models_dir, macros_dir = _project_paths(project)
    policy = run.policy
    name = _dbt_name(policy.release.name, "release.name")
    src = policy.source
    if source_table is None:
        if src.kind == "query":
            raise PolicyError("source.query", "a dbt model reads a table: give --source TABLE (a table or dbt "
                              "model holding the query's rows)")
        source_table = src.table or src.label
    _dbt_name(source_table, "--source")
    # the generic tests quote columns with dbt's adapter.quote, which does not double a quote inside a name: such
    # a test would fail to parse instead of judging the model
    for field, names in (("quasi_identifiers", policy.quasi_identifiers), ("sensitive", policy.sensitive),
                         ("entity_key", [policy.entity_key] if policy.entity_key else [])):
        for column in names:
            if '"' in column or "`" in column:
                raise PolicyError(field, f"column {column!r} holds a quote, which dbt's adapter.quote does not "
                                  "escape in the schema tests; select it under another name in a dbt model or view "
                                  "and anonymize that")
    source_name = f"sqlanon_{name}"
    files = {
        models_dir / "sqlanon" / f"{name}.sql": model_sql(run, dialect, source_name, source_table),
        models_dir / "sqlanon" / f"{name}.yml": schema_yml(run, source_name, source_table, source_schema),
        macros_dir / MACRO_FILE: macro_text(),
    }
    marker = _read_marker(project)
    for path in files:
        key = path.relative_to(project).as_posix()
        folder = project
        for part in path.parent.relative_to(project).parts:
            folder = folder / part
            if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
                raise UserError(f"--project: {folder} is a file, not a folder; sqlanon dbt writes {path} inside it: "
                                "move the file away or change the project's paths")
        if not path.exists():
            continue
        if key not in marker:
            raise UserError(f"--project: {path} exists and was not written by sqlanon dbt; move it away or "
                            "give another project")
        if _digest(path.read_text(encoding="utf-8")) != marker[key]:
            raise UserError(f"--project: {path} was edited since sqlanon dbt wrote it; move it away (or restore "
                            "it) to regenerate")
    # every file staged first (folders made, texts written beside their paths), then all renamed in: a folder
    # or file that cannot be written leaves the project as it was (half a project was written: a model whose
    # schema tests call macros that were not)
    made: list[Path] = []
    staged: list[tuple[Path, Path]] = []
    try:
        for path, text in files.items():
            made.extend(missing_folders(path.parent))
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise UserError(f"--project: cannot make the folder {path.parent}: {e.strerror or e}; check the "
                                "project's permissions or give another project") from None
            staged.append((write_temporary(path, text), path))
    except BaseException:
        remove_temporaries([tmp for tmp, _ in staged], made)
        raise
    failed = []
    for tmp, path in staged:
        try:
            tmp.replace(path)
            marker[path.relative_to(project).as_posix()] = _digest(files[path])
        except OSError as e:
            tmp.unlink(missing_ok=True)
            failed.append(f"{path}: {e.strerror or e}")
    write_atomically(project / MARKER, json.dumps({"written_by": "sqlanon dbt",
                                                "files": dict(sorted(marker.items()))}, indent=2) + "\n")
    if failed:
        raise UserError("--project: cannot write " + "; ".join(failed) + "; the others are written")
    return list(files)

