"""sqlanon: anonymize tables where they live, inside a SQL database.

    import duckdb, sqlanon
    run = sqlanon.search_and_choose(duckdb_connection, policy)   # policy: a dict or a YAML path
    run.lattice, run.candidates, run.chosen.levels, run.chosen.metrics
    run.sql("postgres"); run.materialize(); run.manifest()
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .errors import DataError, PolicyError, PrivacyNotMet, SqlanonError, UserError
from .version import __version__

if TYPE_CHECKING:
    from .anonymizer import Anonymization

__all__ = ["Anonymization", "search_and_choose", "connect", "SqlanonError", "UserError", "PolicyError", "DataError",
           "PrivacyNotMet", "__version__"]


def __getattr__(name: str):
    # `Anonymization` loads the engine (duckdb, numpy, the templates): imported on first use so that
    # `import sqlanon` (and the CLI's start-up) stays light.
    if name == "Anonymization":
        from .anonymizer import Anonymization
        return Anonymization
    raise AttributeError(f"module 'sqlanon' has no attribute {name!r}")


def search_and_choose(connection_or_policy, policy=None, *, db=None, progress=None) -> Anonymization:
    """Search a policy's lattice and choose the best satisfying node; returns the `Anonymization`, ready to
    release (`materialize`), print (`sql`) or report. Nothing is written to the database yet.

    `sqlanon.search_and_choose(policy)` opens its own DuckDB (`db`; by default where `sqlanon anonymize` puts the
    release: the source's database file, or a file beside the policy);
    `sqlanon.search_and_choose(con, policy)` works inside an existing DuckDB connection, whose tables the
    policy's source may name. Use the result in a `with` block (or call `close()`).

    Args:
        connection_or_policy: a DuckDB connection (then `policy` follows), or the policy itself.
        policy: the policy (a dict, or the path of a YAML file) when the first argument is a connection.
        db: the DuckDB file of a run without a connection, where `materialize` writes (default: the source's
            database, or a file beside the policy; ":memory:" releases into a database gone at `close()`).
        progress: a `sqlanon.progress.Progress` to show the search's progress (default: none).

    Returns:
        The `Anonymization`, searched and with its node chosen (`run.chosen`).

    Raises:
        PolicyError, DataError: a bad policy, unusable data, or no node satisfies the policy.

    >>> from sqlanon.examples import PATIENTS_POLICY as policy, patients_connection
    >>> con = patients_connection()       # the table `patients` of six rows (zip, age, disease)
    >>> with search_and_choose(con, policy) as run:
    ...     print(run.lattice.size, "nodes;", [c.levels for c in run.candidates], "minimal")
    ...     print("chosen:", run.chosen.levels, run.chosen.metrics["avg_class_size"])
    24 nodes; [{'zip': 2, 'age': 2}] minimal
    chosen: {'zip': 2, 'age': 2} 3.0
    """
    from .anonymizer import Anonymization
    if policy is None:
        run = Anonymization(connection_or_policy, db=db, progress=progress)
    else:
        run = Anonymization(policy, connection=connection_or_policy, progress=progress)
    try:
        run.search()
        run.choose()
    except BaseException:
        run.close()
        raise
    return run


def connect(connection_or_policy, policy=None, *, db=None, progress=None) -> Anonymization:
    """Deprecated: the old name of `search_and_choose` (it searches the whole lattice, it does not only
    connect). Same arguments, same result, and a DeprecationWarning."""
    warnings.warn("sqlanon.connect() is deprecated: it runs the whole search; call sqlanon.search_and_choose()",
                  DeprecationWarning, stacklevel=2)
    return search_and_choose(connection_or_policy, policy, db=db, progress=progress)
