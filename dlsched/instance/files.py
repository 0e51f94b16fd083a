"""Reading and writing files without surprises: every failure of the file system is an :class:`InputError`.

* :func:`read_text` -- a missing file, a directory, a symlink loop, an unreadable or binary
  file, or one larger than :data:`MAX_BYTES` is an input error naming the file;
* :func:`check_out_path` -- an output path is checked *before* any work is done: its folder
  exists and is writable, it is not a directory, and it is none of the input files;
* :func:`write_atomic` -- the text goes to a temporary file in the same folder, renamed into
  place, so nothing is half-written and an input is never overwritten on failure.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from dlsched.errors import InputError

#: the largest instance or solution file read (a guard against reading a device or a huge file by mistake)
MAX_BYTES = 1 << 30


def _path(path, what: str = "path") -> Path:
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise InputError("<argument>", what, "a file path (str or os.PathLike)", type(path).__name__ if not isinstance(path, str) else "''")
    return Path(path)


def _os_error(source: str, exc: OSError) -> InputError:
    found = {errno.ENOENT: "no such file", errno.EISDIR: "a directory", errno.ELOOP: "a symbolic link loop",
             errno.EACCES: "permission denied", errno.ENOTDIR: "a path through something that is not a directory",
             errno.ENAMETOOLONG: "a name too long"}.get(exc.errno, exc.strerror or type(exc).__name__)
    return InputError(source, "file", "an existing file" if exc.errno == errno.ENOENT else "a readable file", found)


def read_text(path) -> str:
    """The text of a UTF-8 file; every way it cannot be read is an :class:`InputError`."""
    p = _path(path)
    source = str(p)
    try:
        if p.is_dir():
            raise InputError(source, "file", "a readable file", "a directory")
        with open(p, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _os_error(source, exc) from None
    if len(data) > MAX_BYTES:
        raise InputError(source, "file", f"a file of at most {MAX_BYTES} bytes", "a larger file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, f"byte {exc.start}", "a UTF-8 text file", "binary data") from None


def check_out_path(out, inputs=(), what: str = "--out") -> Path:
    """Validate an output path before any work: folder exists and is writable, not a directory,
    not one of ``inputs`` (the same file under another name included)."""
    p = _path(out, what)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise InputError("<argument>", what, "a file path to write", f"'{p}' is a directory")
    if not parent.is_dir():
        raise InputError("<argument>", what, "a path in an existing folder", f"no folder '{parent}'")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError("<argument>", what, "a path in a writable folder", f"'{parent}' is not writable")
    if p.exists() and not os.access(p, os.W_OK) and not os.access(parent, os.W_OK):
        raise InputError("<argument>", what, "a writable file", f"'{p}' is read-only")
    target = os.path.realpath(p)   # unlike Path.resolve(), never raises on a symlink loop
    for src in inputs:
        if src is None:
            continue
        q = Path(src)
        same = os.path.realpath(q) == target
        if not same and p.exists() and q.exists():
            try:
                same = os.path.samefile(p, q)
            except OSError:
                same = False
        if same:
            raise InputError("<argument>", what, "a path other than the input files", f"'{p}' is the input '{src}'")
    return p


def write_atomic(path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename."""
    replace_atomic(path, lambda tmp: Path(tmp).write_text(text))


def replace_atomic(path, write) -> None:
    """Let ``write(tmp)`` produce the file (text, or a solver's model writer) under a temporary
    name in the same folder, then rename it to ``path`` (with the usual permissions)."""
    p = _path(path)
    if p.is_dir():
        raise InputError(str(p), "file", "a file path to write", "a directory")
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.stem}.", suffix=p.suffix or ".tmp")
    except OSError as exc:
        raise InputError(str(p), "file", "a path in an existing, writable folder", exc.strerror or type(exc).__name__) from None
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    finally:
        Path(tmp).unlink(missing_ok=True)
