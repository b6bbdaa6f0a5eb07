"""Errors that reach the user as one clear line, never as a traceback.

Every error sqlanon raises on purpose derives from `SqlanonError`, so a caller can catch them all at
once; each carries the CLI's exit code: 2 for bad input (`UserError` and its subclasses), 3 for a
privacy requirement that is not met (`PrivacyNotMet`).
"""


class SqlanonError(Exception):
    """The root of sqlanon's errors. `exit_code` is what the CLI exits with after printing `str(err)`.

    >>> try:
    ...     raise PolicyError("privacy.k", "must be a positive integer; got 0")
    ... except SqlanonError as e:
    ...     print(e, "->", e.exit_code)
    policy field 'privacy.k': must be a positive integer; got 0 -> 2
    """

    exit_code = 1


class UserError(SqlanonError):
    """Bad input from the user: a policy field, a column, a value. The CLI prints `str(err)` and exits 2."""

    exit_code = 2


class PolicyError(UserError):
    """A policy field is missing, malformed or impossible.

    `field` is the dotted path of the field (``privacy.l_diversity.l``) so the message can name it; a field
    starting with ``--`` is a command-line option, and the message names it as one.

    Args:
        field: the dotted path of the field.
        message: what is wrong with it and what to do, in one line.
    """

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{'option' if str(field).startswith('--') else 'policy field'} '{field}': {message}")


class DataError(UserError):
    """The data does not fit the policy: an unknown column, a value missing from a hierarchy, NULLs..."""


class UnknownValues(DataError):
    """Source values of a quasi-identifier that its hierarchy does not hold (`column`, `values`, `hierarchy`:
    where the hierarchy comes from), so the caller can say what to do in its own terms."""

    def __init__(self, column: str, values: list, hierarchy: str):
        self.column, self.values, self.hierarchy = column, values, hierarchy
        shown = ", ".join(repr(v) for v in values[:5])
        super().__init__(f"column '{column}': value(s) {shown} missing from the hierarchy of '{column}' "
                         f"({hierarchy}); add them to the hierarchy")


class MissingColumn(DataError):
    """A column the policy names (`field`: quasi_identifiers, sensitive, ...) that the source lacks (`columns`:
    the source's), so the caller can say what to do in its own terms (`sqlanon apply`: the new rows' schema)."""

    def __init__(self, field: str, column: str, source: str, columns: list[str]):
        self.field, self.column, self.source, self.columns = field, column, source, columns
        super().__init__(f"{field}: column '{column}' is not in the source {source} (its columns: "
                         f"{', '.join(columns[:20])}); fix the name in the policy")


class PrivacyNotMet(SqlanonError):
    """A release or a check does not satisfy the policy's privacy models (exit code 3)."""

    exit_code = 3


def is_interrupt(e: BaseException) -> bool:
    """Is `e` Ctrl-C, however the engine reports it? DuckDB 2.0 raises a plain RuntimeError "Query interrupted"
    when SIGINT lands during a query (duckdb.InterruptException in older versions), and an error whose text
    begins "KeyboardInterrupt" when it lands in a Python scan inside one (a data frame being copied in)."""
    if isinstance(e, KeyboardInterrupt) or type(e).__name__ == "InterruptException":
        return True
    text = str(e)
    return (type(e) is RuntimeError and text == "Query interrupted") or text.startswith("KeyboardInterrupt")
