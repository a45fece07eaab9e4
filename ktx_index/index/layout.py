"""Where the index lives on disk, its format version, and the single-writer lock."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from indexers import INDEXER_VERSION
from ktx_index.analysis import ANALYSIS_VERSION
from ktx_index.errors import IndexBusy
from ktx_index.index.texts import TEMPLATE_VERSION

#: Bump when the store schema, document JSON or vector files change incompatibly: the index is rebuilt on
#: mismatch (3: the vector file's key sidecar; 4: vocabulary words; 5: each word's count of the documents naming
#: it; 6: the documents' rows hold their words).
FORMAT_VERSION = 6
GITIGNORE_LINE = "index/"
#: A folder to keep every project's index in (one folder per project below it) instead of <project>/.ktx/index.
INDEX_HOME = "KTX_INDEX_HOME"


def format_stamp() -> str:
    return f"format={FORMAT_VERSION};analysis={ANALYSIS_VERSION};indexers={INDEXER_VERSION}"


def embedding_fingerprint(model_fingerprint: str) -> str:
    return f"{model_fingerprint};template={TEMPLATE_VERSION}"


def writable(path: Path) -> bool:
    """Whether ``path``, or the nearest folder above it that exists, can be written (a read-only file system
    answers no even to root)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return os.access(path, os.W_OK)


def user_cache(env: Mapping[str, str]) -> Path:
    """The user's cache folder (XDG; a relative XDG_CACHE_HOME is ignored, as the spec says): where the index of a
    project that cannot hold one is kept."""
    given = Path(env.get("XDG_CACHE_HOME") or "")
    return (given if given.is_absolute() else Path.home() / ".cache") / "ktx-index"


def project_folder_name(project_root: Path) -> str:
    """One folder per project below an index home: its folder's name (to tell them apart by eye) and a hash of its
    absolute path (two projects of one name never share an index)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", project_root.name)[:64].strip("-.") or "project"  # 255 bytes a name
    return f"{name}-{hashlib.sha256(str(project_root).encode()).hexdigest()[:12]}"


class IndexLayout:
    def __init__(self, project_root: Path, index_dir: Path | None = None, elsewhere: str | None = None) -> None:
        """``index_dir``: where the index lives when not in <project>/.ktx/index (``for_project``), and
        ``elsewhere`` why, for ``status``."""
        self.ktx_dir = project_root / ".ktx"
        self.dir = index_dir or self.ktx_dir / "index"
        self.elsewhere = elsewhere if index_dir else None
        self.store = self.dir / "store.sqlite"
        self.lexical = self.dir / "lexical"
        self.vectors = self.dir / "vectors.f16"
        self.lock = self.dir / "write.lock"
        self.watcher = self.dir / "watcher.json"
        self.errors = self.dir / "errors.json"  # the MCP server's last tool errors, for status

    @classmethod
    def for_project(
        cls, project_root: Path, env: Mapping[str, str] = os.environ, can_write: Callable[[Path], bool] = writable
    ) -> IndexLayout:
        """<project>/.ktx/index, unless KTX_INDEX_HOME names another home for indexes or the project cannot hold
        one (a read-only checkout or mount: searching takes lock files in the index folder too), which is then kept
        in the user's cache. Either way one folder per project (``project_folder_name``)."""
        home = env.get(INDEX_HOME)
        if home:
            return cls(
                project_root,
                Path(home).expanduser().resolve() / project_folder_name(project_root),
                f"{INDEX_HOME} is set",
            )
        layout = cls(project_root)
        if can_write(layout.dir):
            return layout
        return cls(
            project_root,
            user_cache(env) / project_folder_name(project_root),
            f"{layout.dir} cannot be written: kept in the user's cache",
        )

    def upstream(self, pid: int) -> Path:
        """Where the ``serve --upstream`` of process ``pid`` keeps its link to upstream KTX, for status: a file per
        server, so two agents' servers fronting one project do not overwrite each other's."""
        return self.dir / f"upstream-{pid}.json"

    def upstreams(self) -> list[Path]:
        """Every server's upstream file (``upstream``), whether it still runs or not."""
        return sorted(self.dir.glob("upstream-*.json"))

    def exists(self) -> bool:
        return self.store.is_file()

    def ensure(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.elsewhere:  # outside the project: nothing to keep out of its repository
            return
        gitignore = self.ktx_dir / ".gitignore"
        lines = gitignore.read_text().splitlines() if gitignore.is_file() else []
        if GITIGNORE_LINE not in lines and "index" not in lines:
            with gitignore.open("a") as fh:
                if lines and lines[-1] != "":
                    fh.write("\n")
                fh.write(f"# ktx-index's search index (rebuilt from the project files)\n{GITIGNORE_LINE}\n")

    def wipe(self, keep_vectors: bool = False) -> None:
        """Remove the derived data (not the lock held by the caller). keep_vectors keeps the vector file and
        its key sidecar, which describe themselves: a new store re-attaches what still matches."""
        for path in (self.lexical,):
            shutil.rmtree(path, ignore_errors=True)
        paths = [self.store, self.store.with_suffix(".sqlite-wal"), self.store.with_suffix(".sqlite-shm")]
        if not keep_vectors:
            paths += [self.vectors, self.vectors.with_suffix(".keys"), self.dir / "vectors.f32"]  # f32: format 1
        for path in paths:
            path.unlink(missing_ok=True)


class WriterLock:
    """One writer per index, across processes (flock: released when the holder dies)."""

    def __init__(self, layout: IndexLayout) -> None:
        self.layout = layout
        self._fd: int | None = None

    def acquire(self) -> None:
        self.layout.ensure()
        fd = os.open(self.layout.lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise IndexBusy(
                f"index {self.layout.dir} is being written by PID {holder}",
                "wait for that rebuild, watcher or serving process to finish writing (or stop it); searches keep "
                "working meanwhile",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder_pid(self) -> int | None:
        """PID of the process holding the lock, or None when nobody writes."""
        if not self.layout.lock.is_file():
            return None
        fd = os.open(self.layout.lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 64, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)
