"""Writing several result tables at once, atomically (the pattern of `sqlanon.release`).

Each table is built under a temporary name (`sqlanon.templates.temporary_relation`); when all are built, one
transaction drops the old tables and renames the new ones in and records them in the release catalog
(`sqlanon.catalog`). Before anything is built, each name is checked against that catalog: a table that
exists is replaced only when it is this same output's earlier table (the same `owner` name), never a
relation the run reads. A failure while building leaves the old tables (or nothing) and drops whatever
temporary table it made: never half a release.
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import PolicyError
from ..templates import temporary_relation

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_name(name: str, field: str) -> str:
    """A table name the user chose: letters, digits and _, not starting with the reserved __sqlanon."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise PolicyError(field, f"must be a table name of letters, digits and _; got {name!r}")
    if name.lower().startswith("__sqlanon"):
        raise PolicyError(field, "names starting with __sqlanon (in any case) are reserved")
    return name


# columns of the bucketized and Privacy-MaxEnt tables: a source column of one of these names, in any case (DuckDB
# and Spark match column names whatever the case of their ASCII letters), would be read in their place
RESERVED_COLUMNS = ("bucket", "count", "pseudonym")


def reserved_column(name: str) -> bool:
    """Whether a source column's name is one of `RESERVED_COLUMNS`, in any case.

    Examples:
        >>> reserved_column("Bucket"), reserved_column("buckets")
        (True, False)
    """
    return name.lower() in RESERVED_COLUMNS


def output_name(given: str | None, default: str) -> str:
    """The name of an output's tables: `given` (``--name``), else `default` (made from ``release.name``), which
    when it is no plain table name is refused as a default, not as a ``--name`` the user never gave."""
    if given is not None:
        return check_name(given, "--name")
    try:
        return check_name(default, "--name")
    except PolicyError:
        raise PolicyError("--name", f"the default name {default!r}, made from release.name, is not a table name of "
                          "letters, digits and _; give --name") from None


@contextlib.contextmanager
def atomic_tables(backend, names: list[str], owner: str, kind: str, policy=None, sources: Sequence[str] = (),
                  files: Callable[[dict[str, int]], list[tuple[Path, Path]]] | None = None):
    """Build each table of `names` under `temporary_relation(name)` inside the block; swap them all in at its end,
    with catalog rows of `kind` for the release `owner`.

    Refused before the block runs (ReleaseRefused) when a name is a source (the policy's or one of
    `sources`) or an existing relation the catalog does not show `owner` wrote. On an exception inside
    the block the temporary tables are dropped and the old tables stay. `files` (each table's rows -> the
    (temporary file, path) pairs it wrote, `files.write_temporary`) runs inside the swap's transaction, as a
    release's manifest does: a report that cannot be written rolls the tables back; the files are renamed
    into place once the tables commit.
    """
    from ..catalog import Catalog, Target, check_targets, leftovers, new_release_id, policy_hash
    from ..files import remove_temporaries, rename_temporaries
    from ..release import _drop_stale
    catalog = Catalog(backend)
    targets = [Target(n, kind) for n in names]
    check_targets(backend, policy, owner, targets, catalog=catalog, sources=list(sources), name_field="--name",
                  replace=policy.release.replace if policy is not None else True)
    # tables an earlier write of `owner` made and this one does not (NAME_private after --no-private, NAME_persons
    # without persons): dropped in the swap, or maxent read a stale private table as this release's original
    stale = leftovers(catalog, owner, targets, (kind,))
    for n in names:
        backend.execute("drop_relation.sql", name=temporary_relation(n), kind="TABLE")   # left by a crashed run
    staged: list[tuple[Path, Path]] = []
    try:
        yield
        with backend.transaction():
            for n in names:
                backend.drop_relation(n)
                backend.execute("rename_table.sql", old=temporary_relation(n), new=n)
            _drop_stale(backend, catalog, stale)
            for t in targets:
                t.rows = int(backend.fetchrow("count_rows.sql", relation=t.name)[0])
            catalog.record(owner, targets, release_id=new_release_id(),
                           policy_sha256=policy_hash(policy.normalized()) if policy is not None else None,
                           dropped=stale)
            if files is not None:       # last, still inside the transaction
                staged.extend(files({t.name: t.rows for t in targets if t.rows is not None}))
    except BaseException:
        for n in names:
            with contextlib.suppress(Exception):
                backend.execute("drop_relation.sql", name=temporary_relation(n), kind="TABLE")
        remove_temporaries([tmp for tmp, _ in staged])
        raise
    rename_temporaries(staged, f"the tables of {owner} are written")
