"""What the command modules of `sqlanon.cli` share: user errors as one line and an exit code, the progress
display, a searched run, JSON output that replaces only what sqlanon wrote, the checked manifest path, the
`--node` parser and the command group's one-line usage errors."""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from ..catalog import strict_json
from ..errors import PolicyError, PrivacyNotMet, UserError, is_interrupt
from ..progress import Progress

if TYPE_CHECKING:
    from ..anonymizer import Anonymization

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> NoReturn:
    """Print `sqlanon: error: MESSAGE` on stderr and exit with CODE."""
    click.echo(f"sqlanon: error: {message}", err=True)
    sys.exit(code)


def interrupted() -> NoReturn:
    click.echo("sqlanon: interrupted", err=True)
    sys.exit(130)


def user_errors(fn: F) -> F:
    """Turn user errors into one line and an exit code; anything else is a bug and keeps its traceback."""
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            fail(str(e), e.exit_code)
        except PrivacyNotMet as e:
            fail(str(e), e.exit_code)
        except Exception as e:
            if not is_interrupt(e):     # a bug: its traceback
                raise
            interrupted()
        except KeyboardInterrupt:
            interrupted()
    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature, mypy cannot see it


def progress_for(quiet: bool) -> Progress:
    """The progress display of a command: none with -q."""
    return Progress(enabled=False) if quiet else Progress()


def search_run(policy: Any, db: str | None, quiet: bool, mode: str | None = "incognito") -> Anonymization:
    """An Anonymization with its minimal nodes found (none searched yet with `mode` None: `choose` searches);
    use it in a `with` block."""
    from ..anonymizer import Anonymization
    run = Anonymization(policy, db=db, progress=progress_for(quiet))
    if mode is None:
        return run
    try:
        run.search(mode)
    except BaseException:
        run.close()
        raise
    return run


def table_run(policy: Any, table: str, db: str | None, progress: Progress | None = None) -> Anonymization:
    """An Anonymization over an existing table (`check --table`, `attack --table`): a column of the policy the
    table lacks is the table's fault, said so (the source's line said "fix the name in the policy"); an entity
    key a release does not keep unless release.keep names it."""
    from ..anonymizer import Anonymization
    from ..errors import DataError, MissingColumn
    try:
        return Anonymization(policy, db=db, progress=progress or Progress(enabled=False))
    except MissingColumn as e:
        hint = ("; a release keeps the entity key only when release.keep names it: keep it to check persons"
                if e.field == "entity_key" else "; give a table the policy was released into")
        raise DataError(f"--table: column '{e.column}' ({e.field} of the policy) is not in {table} (its columns: "
                        f"{', '.join(e.columns[:20])}){hint}") from None


# the first key of a JSON report sqlanon writes into a file (its command), by which a later run knows the file
# is one it may replace: any other JSON file (a package.json, a user's data) is refused
REPORT_KEY = "sqlanon_report"


def write_json(data: Any, path: str | None, keep: Iterable[str | Path] = (), manifest_of: str | None = None) -> None:
    """JSON on stdout (`None` or '-') or into a file, which may replace a report sqlanon wrote (`REPORT_KEY`, added
    first to a report written to a file) or, with `manifest_of`, a manifest of that release that records no
    outputs, but nothing else (`refuse_non_json`): that is refused, exit 2, nothing written."""
    if path in (None, "-"):
        click.echo(strict_json(data))
    else:
        assert path is not None
        refuse_non_json(Path(path), keep=keep, manifest_of=manifest_of)
        from ..files import write_atomically
        write_atomically(Path(path), _file_json(data))


def refuse_one_output_twice(json_path: str | None, manifest_path: str | None) -> None:
    """--json and --manifest at one place: two JSON documents on stdout (no longer JSON), or one file written twice,
    the second replacing the first. Refused before any work."""
    if json_path is None or manifest_path is None:
        return
    if json_path == manifest_path == "-":
        raise PolicyError("--json/--manifest", "both print on stdout, which would hold two JSON documents; write one "
                          "of them to a file")
    if "-" not in (json_path, manifest_path) and Path(json_path).resolve() == Path(manifest_path).resolve():
        raise PolicyError("--json/--manifest", f"both name {json_path}, and the second would replace the first; "
                          "give them two paths")


def stage_json(data: Any, path: str, keep: Iterable[str | Path] = (), manifest_of: str | None = None
               ) -> tuple[Path, Path]:
    """`write_json` into a file, but into a temporary one beside it (`files.write_temporary`), returned with the
    path for the caller to rename once the tables the JSON describes commit (`maxent.tables.atomic_tables`)."""
    refuse_non_json(Path(path), keep=keep, manifest_of=manifest_of)
    from ..files import write_temporary
    return write_temporary(Path(path), _file_json(data)), Path(path)


def _file_json(data: Any) -> str:
    """The text of a JSON file: a report (no manifest) starts with `REPORT_KEY`, what says sqlanon wrote it."""
    if isinstance(data, dict) and "sqlanon_version" not in data:       # a report, not a manifest
        ctx = click.get_current_context(silent=True)
        data = {REPORT_KEY: ctx.command_path if ctx is not None else "sqlanon", **data}
    return strict_json(data) + "\n"


def is_report(path: Path) -> bool:
    """A JSON report sqlanon wrote (its first key `REPORT_KEY`)."""
    return _head(path).lstrip(b"{").lstrip().startswith(f'"{REPORT_KEY}"'.encode())


def _head(path: Path) -> bytes:
    """The first bytes of an existing output file, to see what it is; one that cannot be read (or is no regular
    file: a pipe would block) is refused, never replaced."""
    from ..catalog import ReleaseRefused
    try:
        if not path.is_file():
            raise ReleaseRefused(f"refusing to write JSON to {path}: it is not a regular file; choose another path")
        with open(path, "rb") as f:
            return f.read(64).lstrip()
    except OSError as e:
        raise ReleaseRefused(f"refusing to overwrite {path}: cannot read it ({e.strerror or e}); choose another "
                             "path") from None


def refuse_non_json(path: Path, option: str = "--json", keep: Iterable[str | Path] = (),
                    manifest_of: str | None = None, ours: Callable[[Path], bool] = is_report) -> None:
    """Refuse (ReleaseRefused, exit 2) to write JSON over a directory, an existing file that is not JSON, a file
    of `keep` (what the command reads: its policy, a knowledge file, a manifest it was given), a sqlanon
    manifest, or any other file sqlanon did not write (`ours`: by default a report it wrote, `is_report`), or into
    a folder that does not exist (`option` names it). A manifest is replaced only by another of the same release
    (`manifest_of`, the release the new one describes) and only where it records no outputs: one that `attack`,
    `maxent` or `marginals --no-release` wrote, not the record of a release."""
    from ..catalog import ReleaseRefused, is_manifest, manifest_release
    check_output_folder(str(path), option)     # else a FileNotFoundError traceback once the tables are written
    if path.is_dir():
        raise ReleaseRefused(f"refusing to write JSON to {path}: it is a directory")
    if not path.exists():
        return
    target = path.resolve()
    if any(target == Path(k).resolve() for k in keep):
        raise ReleaseRefused(f"refusing to write {option} {path}: the command reads it; choose another path")
    head = _head(path)
    if head and head[:1] not in (b"{", b"["):
        raise ReleaseRefused(f"refusing to overwrite {path} with JSON: it exists and is not a JSON file; "
                             "choose another path")
    if is_manifest(path):
        if not (manifest_of is not None and manifest_release(path) == manifest_of and not _records_outputs(path)):
            raise ReleaseRefused(f"refusing to overwrite {path} ({option}): it is the manifest of a sqlanon release; "
                                 "choose another path")
    elif not ours(path):
        raise ReleaseRefused(f"refusing to overwrite {path} ({option}): sqlanon did not write it; choose another "
                             "path, or remove it")


def _records_outputs(path: Path) -> bool:
    """Does a manifest file list released outputs (tables, views, exports)? Unreadable counts as yes."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    return not isinstance(data, dict) or bool(data.get("outputs"))


def check_output_folder(path: str | None, option: str) -> None:
    """An output file's folder must exist and be writable, and its name fit the file system, before anything is
    released (else the release would be written and the manifest lost)."""
    if path in (None, "-"):
        return
    assert path is not None
    folder = Path(path).expanduser().resolve().parent
    if not folder.is_dir():
        raise UserError(f"{option}: the folder {folder} does not exist; create it or give another path")
    from ..files import name_max
    if not os.access(folder, os.W_OK | os.X_OK):      # else refused only once the release is committed
        raise UserError(f"{option}: cannot write in the folder {folder}; give another path")
    if len(os.fsencode(Path(path).name)) > name_max(folder):
        raise UserError(f"{option}: the file name is longer than the {name_max(folder)} bytes the file system "
                        "allows; choose a shorter one")


def manifest_target(run: Anonymization, json_path: str | None, force: bool) -> Path:
    """The manifest file a run writes (`--json PATH`, or beside the database), checked before anything is
    released: never the source, the policy, a hierarchy file or the database; an existing file that is not a
    sqlanon manifest only with --force."""
    from ..catalog import check_file_target, protected_files
    path = Path(json_path) if json_path is not None and json_path != "-" else run.default_manifest_path()
    check_output_folder(str(path), "--json")
    for i, export in enumerate(run.policy.release.export):
        # both are renamed into place after the commit: the manifest would silently replace the export
        if Path(export).resolve() == path.resolve():
            raise UserError(f"--json: {path} is release.export[{i}], which the release writes; give the manifest "
                            "another path")
    ctx = click.get_current_context(silent=True)
    forcible = ctx is None or any(p.name == "force" for p in ctx.command.params)
    # a JSON report sqlanon wrote there (a run that released nothing) is replaced, as write_json would
    check_file_target(path, "the manifest", protected_files(run.policy, run.backend), {}, run.policy.release.name,
                      force or (path.is_file() and is_report(path)), manifest_ok=True, forcible=forcible)
    return path


def levels_text(levels: dict) -> str:
    """`{"age": 2, "sex": 1}` -> `age=2, sex=1`."""
    return ", ".join(f"{k}={v}" for k, v in levels.items())


def parse_node(text: str) -> dict[str, int]:
    """`age=2,sex=1` -> {"age": 2, "sex": 1}; a malformed part is a PolicyError naming `--node`."""
    out: dict[str, int] = {}
    for part in text.split(","):
        if "=" not in part:
            raise PolicyError("--node", f"expected NAME=LEVEL,NAME=LEVEL...; got {text!r}")
        k, v = part.split("=", 1)
        if k.strip() in out:        # the last one silently won
            raise PolicyError(f"--node {k.strip()}", f"given twice in {text!r}; give each quasi-identifier once")
        try:
            out[k.strip()] = int(v)
        except ValueError:
            raise PolicyError(f"--node {k.strip()}", f"level must be an integer; got {v!r}") from None
    return out


class OneLineUsageError(click.ClickException):
    """A command-line usage error (unknown option, bad choice, missing argument) shown as the one line every
    other bad input gets, with the help command to run, instead of click's usage block."""

    exit_code = 2

    def __init__(self, error: click.UsageError, command: str | None = None):
        # an option missing its value comes without the subcommand's context: `command` names it then
        where = error.ctx.command_path if error.ctx is not None else (command or "sqlanon")
        super().__init__(f"{error.format_message()} (see {where} --help)")

    def show(self, file=None) -> None:
        click.echo(f"sqlanon: error: {self.format_message()}", err=True)


class SqlanonGroup(click.Group):
    """The command group: usage errors of the group and of every subcommand become one line."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args:        # bare `sqlanon`: the help, as --help shows it (it came as a 27-line error, exit 2)
            click.echo(ctx.get_help())
            ctx.exit(0)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise OneLineUsageError(e) from None

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta["sqlanon.command"] = f"{ctx.command_path} {name}" if name else None
        return name, command, rest

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as e:
            raise OneLineUsageError(e, ctx.meta.get("sqlanon.command")) from None
