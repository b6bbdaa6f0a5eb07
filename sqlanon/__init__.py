"""sqlanon: anonymize tables where they live, inside a SQL database.

    import duckdb, sqlanon
    run = sqlanon.connect(duckdb_connection, policy)   # policy: a dict or a YAML path
    run.lattice, run.candidates, run.chosen.levels, run.chosen.metrics
    run.sql("postgres"); run.materialize(); run.manifest()
"""
from .errors import DataError, PolicyError, PrivacyNotMet, SqlanonError, UserError

from .version import __version__

__all__ = ["Anonymization", "connect", "SqlanonError", "UserError", "PolicyError", "DataError", "PrivacyNotMet",
           "__version__"]


def __getattr__(name: str):
    # `Anonymization` loads the engine (duckdb, numpy, the templates): imported on first use so that
    # `import sqlanon` (and the CLI's start-up) stays light.
    if name == "Anonymization":
        from .anonymizer import Anonymization
        return Anonymization
    raise AttributeError(f"module 'sqlanon' has no attribute {name!r}")


def connect(connection_or_policy, policy=None, *, db=":memory:", progress=None):
    """Search a policy's lattice and choose the best satisfying node; returns the `Anonymization`.

    `sqlanon.connect(policy)` opens its own DuckDB (`db`: a file, or in memory); `sqlanon.connect(con,
    policy)` works inside an existing DuckDB connection, whose tables the policy's source may name.
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
