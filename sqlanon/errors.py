"""Errors that reach the user as one clear line (exit code 2), never as a traceback."""


class UserError(Exception):
    """Bad input from the user: a policy field, a column, a value. The CLI prints `str(err)` and exits 2."""

    exit_code = 2


class PolicyError(UserError):
    """A policy field is missing, malformed or impossible.

    `field` is the dotted path of the field (``privacy.l_diversity.l``) so the message can name it.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"policy field '{field}': {message}")


class DataError(UserError):
    """The data does not fit the policy: an unknown column, a value missing from a hierarchy, NULLs..."""


class PrivacyNotMet(Exception):
    """A release or a check does not satisfy the policy's privacy models (exit code 3)."""

    exit_code = 3
