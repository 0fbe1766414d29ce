"""Write a bundle into a temporary folder and rename it into place: never half a bundle, never a lost old one."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgepack.runtime.errors import EdgepackError


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
        yield staging
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
