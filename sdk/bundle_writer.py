"""Write a bundle into a temporary folder and rename it into place: never half a bundle, never a lost old one."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgepack.runtime.errors import EdgepackError

NOT_WRITABLE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
"""OS errors, while the bundle is written, that say where it goes cannot take it (full, read-only, not allowed)."""


def check_output_folder(folder: Path) -> None:
    """Fails before any work where the bundle could not be written: a file in the way, a folder that cannot be
    made, or one this user cannot write to (a read-only filesystem, another user's folder)."""
    if folder.exists() and not folder.is_dir():
        raise EdgepackError(f"the output folder {str(folder)!r} is a file", where=str(folder.absolute()),
                            fix="choose a folder with -o (it is made when missing)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=".edgepack-write-check-", dir=folder))
    except OSError as error:
        raise _not_writable(folder, error) from None


def _not_writable(folder: Path, error: OSError) -> EdgepackError:
    return EdgepackError(f"cannot write the bundle into {str(folder)!r}: {error.strerror or error}",
                         where=str(Path(error.filename or folder).absolute()),
                         fix="choose a folder on a writable filesystem with space, that this user may write to, "
                             "with -o")


@contextmanager
def bundle_lock(final: Path) -> Iterator[None]:
    """Holds `.<bundle>.lock` beside the bundle while it is built, so that a second build of the same bundle at the
    same time is refused at once rather than racing the first to the final rename. The file goes when the build
    ends."""
    path = final.with_name(f".{final.name}.lock")
    try:
        handle = path.open("a")
    except OSError as error:
        raise _not_writable(final.parent, error) from None
    locked = False
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = path.exists() and path.stat().st_ino == os.fstat(handle.fileno()).st_ino
        except BlockingIOError:
            pass
        if not locked:
            raise EdgepackError(f"another edgepack build is writing {str(final)!r} now", where=str(final.absolute()),
                                fix="wait for it to finish, or build into another folder with -o")
        yield
    finally:
        if locked:
            path.unlink(missing_ok=True)
        handle.close()


def refuse_existing(final: Path, force: bool) -> None:
    if final.exists() and not force:
        raise EdgepackError(f"output {str(final)!r} already exists", where=str(final.absolute()),
                            fix="pass --force to replace it, or choose another folder with -o")


@contextmanager
def staged_bundle(final: Path, force: bool) -> Iterator[Path]:
    """Yield an empty staging folder beside `final`; on success it replaces `final`, on error it is removed."""
    refuse_existing(final, force)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; a bundle is meant to be shared
    try:
        try:
            yield staging
        except OSError as error:
            if error.errno in NOT_WRITABLE:
                raise _not_writable(final.parent, error) from error
            raise
        refuse_existing(final, force)
        if final.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old", dir=final.parent))
            final.rename(retired / final.name)
            staging.rename(final)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            staging.rename(final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
