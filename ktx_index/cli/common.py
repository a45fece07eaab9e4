"""Options and rendering helpers shared by the commands."""

from __future__ import annotations

import contextlib
import functools
import json
import signal
from collections.abc import Callable, Iterator
from typing import Any

import click
from click.core import ParameterSource
from pydantic import BaseModel

from indexers.models import ALL_KINDS, Diagnostic
from indexers.project import ProjectNotFound, find_project_root
from ktx_index.errors import KtxIndexError, refused_by_system
from ktx_index.logs import LEVELS, configure
from ktx_index.reports import StaleFile
from ktx_index.service import KtxIndex

project_option = click.option(
    "--project",
    "project_dir",
    type=click.Path(),  # a file or a missing folder is told by find_project_root, exit 1 like every user error
    metavar="DIRECTORY",
    default=None,
    help="Project folder (default: nearest ancestor with ktx.yaml, else the current directory).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")


def log_options(default_level: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--log-level and --log-file: the call log (JSON lines, see ktx_index/logs.py) on stderr or in a file,
    configured before the command runs (which never sees the two options)."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def logged(*args: Any, log_level: str, log_file: str | None, **kwargs: Any) -> Any:
            setup_logging(log_level, log_file)
            return command(*args, **kwargs)

        fn = click.option(
            "--log-file",
            type=click.Path(dir_okay=False, writable=True),
            default=None,
            help="Append the log (one JSON object per line) to this file instead of stderr.",
        )(logged)
        return click.option(
            "--log-level",
            type=click.Choice(LEVELS, case_sensitive=False),
            default=default_level,
            show_default=True,
            help="INFO: one line per tool call (serve) and per watcher commit; WARNING: errors and retries only.",
        )(fn)

    return decorate


def setup_logging(level: str, path: str | None) -> None:
    try:
        configure(level, path)
    except OSError as exc:
        raise click.ClickException(f"cannot open log file {path}: {exc.strerror or exc}") from exc


def given(option: str) -> bool:
    """Whether the running command's ``option`` (its parameter name) was typed on the command line, not left at
    its default or read from the environment: options that do not apply are refused only when asked for."""
    return click.get_current_context().get_parameter_source(option) == ParameterSource.COMMANDLINE


def open_service(project_dir: str | None, **kwargs: Any) -> KtxIndex:
    try:
        return KtxIndex(find_project_root(project_dir), **kwargs)
    except (ProjectNotFound, KtxIndexError) as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise os_error(exc) from exc


def os_error(exc: OSError) -> click.ClickException:
    return click.ClickException(refused_by_system(exc))


def render_counts(counts: dict[str, int], empty: str = "nothing") -> str:
    """Documents per kind in the kinds' order (indexers.models.ALL_KINDS), the kinds with none left out."""
    order = {kind: i for i, kind in enumerate(ALL_KINDS)}
    shown = sorted((k for k, n in counts.items() if n), key=lambda k: (order.get(k, len(order)), k))
    return ", ".join(f"{kind} {counts[kind]}" for kind in shown) or empty


def echo_diagnostics(diagnostics: list[Diagnostic], stale: list[StaleFile], err: bool = False) -> None:
    """Each diagnostic and each file kept at its last good version, one a line, as inspect, rebuild and status
    list them."""
    for diag in diagnostics:
        click.echo(f"  {diag.code:<11} {diag.path}: {diag.message}", err=err)
    for kept in stale:
        click.echo(f"  stale       {kept.path}: last good version kept ({kept.reason})", err=err)


def echo_json(payload: BaseModel | dict[str, Any]) -> None:
    data = payload.model_dump(mode="json", by_alias=True) if isinstance(payload, BaseModel) else payload
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a file name that is not UTF-8 (its bytes kept as surrogates): escape them
            text = json.dumps(data, indent=2)
    click.echo(text)


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the library's errors into exit code 1 with the message (and its next step)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KtxIndexError as exc:
            raise click.ClickException(str(exc)) from exc
        except BrokenPipeError:  # the reader went away (`| head`): not the project's fault
            raise
        except OSError as exc:
            raise os_error(exc) from exc

    return wrapper


@contextlib.contextmanager
def stop_on_signals(*stoppers: Callable[[], None]) -> Iterator[None]:
    """SIGINT and SIGTERM ask for a stop at a safe point (the stoppers run, and must return at once);
    a second signal interrupts at once (KeyboardInterrupt)."""
    received = []

    def handler(_signum: int, _frame: object) -> None:
        received.append(_signum)
        for stop in stoppers:
            stop()
        if len(received) > 1:
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
