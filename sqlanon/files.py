"""Reading the small files a user hands sqlanon: policies, knowledge files, hierarchies, manifests.

Each must be a regular file under a size limit (so `hierarchy: /dev/zero` or a FIFO is refused at once
instead of being read for ever), in the expected text encoding, and a YAML file must not repeat a
key: PyYAML keeps the last of two equal keys without a word, which silently drops a whole section
(two `privacy:` blocks, the first with the l-diversity settings). Every failure is a `PolicyError`
naming the field and the file, so the CLI prints one line and exits 2.
"""
from __future__ import annotations

import codecs
import contextlib
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from .errors import DataError, PolicyError

MB = 1024 * 1024
POLICY_LIMIT = 1 * MB          # a policy or a knowledge file is a few hundred lines
MANIFEST_LIMIT = 64 * MB       # lattice listings of big searches
HIERARCHY_LIMIT = 64 * MB      # one row per base value: millions of short rows


def _size_text(limit: int) -> str:
    return f"{limit // MB} MB"


def checked_file(path: Path | str, field: str, what: str, limit: int) -> Path:
    """`path` when it is a regular file of at most `limit` bytes; otherwise a PolicyError naming it."""
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise PolicyError(field, f"{what} {path} does not exist") from None
    except OSError as e:
        raise PolicyError(field, f"cannot read {what} {path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, pipe or socket)"
        raise PolicyError(field, f"{what} {path} is {kind}; give a regular file")
    if st.st_size > limit:
        raise PolicyError(field, f"{what} {path} is {st.st_size / MB:.1f} MB; sqlanon reads at most "
                          f"{_size_text(limit)} for a {what}: check that it is the right file")
    return path


def encoding_name(value, field: str) -> str:
    """A text encoding named in a policy (`encoding: latin-1`), checked against Python's codecs."""
    if not isinstance(value, str) or not value.strip():
        raise PolicyError(field, f"must name a text encoding such as utf-8 or latin-1; got {value!r}")
    try:
        info = codecs.lookup(value)
    except LookupError:
        raise PolicyError(field, f"unknown text encoding {value!r}; use for example utf-8, latin-1 or cp1252") from None
    if not is_text_encoding(info):
        raise PolicyError(field, f"{value!r} is a codec of bytes, not a text encoding; use for example utf-8, "
                          "latin-1 or cp1252")
    return info.name


def is_text_encoding(info: codecs.CodecInfo) -> bool:
    """Whether a codec decodes bytes to text (rot-13, base64 and hex are codecs of Python too, of other kinds)."""
    return bool(getattr(info, "_is_text_encoding", True))


def read_text(path: Path | str, field: str, what: str, limit: int, encoding: str = "utf-8",
              hint: str = "save it as UTF-8") -> str:
    """The text of a checked file (`checked_file`), decoded; a decoding error names the byte offset and,
    when the file was read as UTF-8, says how to name another encoding."""
    path = checked_file(path, field, what, limit)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise PolicyError(field, f"cannot read {what} {path}: {e.strerror}") from None
    utf8 = codecs.lookup(encoding).name == "utf-8"
    try:
        # a UTF-8 byte-order mark is no text: kept, it made a taxonomy's first header cell '\ufeffchild'
        return data.decode("utf-8-sig" if utf8 else encoding)
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        hint = f" ({hint})" if utf8 else ""
        raise PolicyError(field, f"{what} {path} is not {encoding} text: byte 0x{data[e.start]:02x} on line {line} "
                          f"cannot be decoded{hint}") from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that repeats a key."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:    # the keys written here; a merge (<<: *base) may be overridden
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            if key in seen:     # by the key, not its line: `{k: 2, k: 3}` (and any one-line JSON) is on one line
                raise DuplicateKey(key, seen[key], line)
            seen[key] = line
        except TypeError:        # an unhashable key: the constructor below reports it as PyYAML does
            continue
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


class DuplicateKey(Exception):
    def __init__(self, key, first: int, again: int):
        self.key, self.first, self.again = key, first, again
        super().__init__(f"key {key!r} on line {again} repeats line {first}" if first != again else
                         f"key {key!r} is given twice on line {again}")


def load_yaml(text: str, path: Path | str, field: str):
    """Parse YAML text (a policy or knowledge file) with PyYAML's safe loader; a syntax error or a key
    given twice in one mapping is a PolicyError naming the line."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)   # a SafeLoader subclass
    except DuplicateKey as e:
        where = f"lines {e.first} and {e.again}" if e.first != e.again else f"both on line {e.again}"
        raise PolicyError(field, f"{path}: key {e.key!r} appears twice in the same mapping ({where}); YAML would "
                          "keep only the last: merge them into one") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise PolicyError(field, f"{path} is not valid YAML{where}: {problem}") from None


def temporary_file(path: Path) -> Path:
    """A new empty file beside `path`, created for this write alone, to write and then rename over `path`: a
    fixed name (``path.tmp``, ``path.sqlanon_tmp``) could be a user's file, and was overwritten and removed."""
    # a short name of its own (not the target's name lengthened: a name near the file system's limit fits)
    fd, name = tempfile.mkstemp(prefix=".sqlanon_tmp_", dir=path.parent)
    try:
        # mkstemp makes the file 0600: the target keeps its own mode (a private file stays private), and a new
        # one gets the mode any new file would (0644 under umask 022)
        try:
            mode = path.stat().st_mode & 0o777
        except OSError:
            mode = 0o666 & ~_umask()
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return Path(name)


def _umask() -> int:
    mask = os.umask(0o022)      # the only way to read it is to set it; set back at once
    os.umask(mask)
    return mask


def missing_folders(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist yet, outermost first: what making it would create (the
    parent of the first is the nearest folder that exists)."""
    out: list[Path] = []
    folder = folder.absolute()
    while not folder.exists() and folder != folder.parent:
        out.insert(0, folder)
        folder = folder.parent
    return out


def name_max(folder: Path) -> int:
    """The longest file name (in bytes) the file system of an existing `folder` allows."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a `temporary_file` renamed over it: a reader sees the old file or the new
    one, never half of it, and a failure leaves the old file and no temporary one. A file that cannot be written
    (a read-only folder, a name too long, a full disk) is one line (DataError), not a traceback."""
    tmp = write_temporary(path, text)
    try:
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise DataError(f"cannot write {path}: {e.strerror or e}; choose another path") from None
        raise


def remove_temporaries(paths: Sequence[Path], folders: Sequence[Path] = ()) -> None:
    """Remove the temporary files of a run that failed before they were renamed into place (`write_temporary`),
    then the `folders` made for them (outermost first, as `missing_folders` lists them), deepest first, each
    only when empty."""
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink(missing_ok=True)
    for f in reversed(folders):
        with contextlib.suppress(OSError):
            f.rmdir()


def rename_temporaries(staged: Sequence[tuple[Path, Path]], written: str) -> None:
    """Rename each (temporary file, path) of `staged` into place, once what they describe has committed: a rename
    that fails then is one line (DataError) saying what is `written` already and where the file's text is."""
    failed = []
    for tmp, path in staged:        # every one tried: a failure leaves the others' files in place, not temporary
        try:
            tmp.replace(path)
        except OSError as e:
            failed.append(f"{path} is not: {e.strerror or e}; it is in {tmp}")
    if failed:
        raise DataError(f"{written}, but " + "; and ".join(failed))


def write_temporary(path: Path, text: str) -> Path:
    """`text` in a new `temporary_file` beside `path`, for the caller to rename over it (`write_atomically` at
    once; a release once its transaction commits). A failure leaves no file; an OSError is one line (DataError)."""
    tmp = None
    try:
        tmp = temporary_file(path)
        tmp.write_text(text, encoding="utf-8")
    except BaseException as e:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise DataError(f"cannot write {path}: {e.strerror or e}; choose another path") from None
        raise
    return tmp
