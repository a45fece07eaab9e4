"""``serve``'s options are checked before any work: HTTP-only options with stdio, --no-build with --watch, an
unsafe bind; its start line says what it does of embeddings."""

import shutil
import threading

from projects import run_cli

from ktx_index.cli.serve_cmd import _catch_up
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.service import KtxIndex


def test_http_options_with_stdio_are_refused_not_ignored(project):
    result = run_cli("serve", "--project", project, "--port", "9999", "--host", "0.0.0.0")
    assert result.exit_code == 2
    assert "--host/--port apply to HTTP only; add --transport http" in result.output


def test_no_build_with_watch_is_refused_not_ignored(project):
    """The watcher catches up at start whatever --no-build says (until this test, silently)."""
    result = run_cli("serve", "--project", project, "--watch", "--no-build")
    assert result.exit_code == 2
    assert "--no-build does not apply with --watch" in result.output and "drop one of them" in result.output
    assert not (project / ".ktx").exists()  # refused before any work


def test_a_token_of_spaces_does_not_open_a_public_bind(project, monkeypatch):
    monkeypatch.setenv("KTX_INDEX_TOKEN", "   ")  # from the environment: no stdio complaint, and no protection
    result = run_cli("serve", "--project", project, "--transport", "http", "--host", "0.0.0.0")
    assert result.exit_code == 2 and "without a token" in result.output


def start_line(service: KtxIndex, capsys, monkeypatch) -> str:
    """What serve's catch-up says on stderr, its background embedding waited for."""
    started: list[threading.Thread] = []
    real = KtxIndex.embed_in_background

    def kept(self: KtxIndex, on_done=None) -> threading.Thread:
        started.append(thread := real(self, on_done))
        return thread

    monkeypatch.setattr(KtxIndex, "embed_in_background", kept)
    assert _catch_up(service)
    for thread in started:
        thread.join(30)
    return capsys.readouterr().err


def test_the_start_line_announces_background_embedding_only_when_there_is_some(project, capsys, monkeypatch):
    """(Until this test serve said 'embedding new texts in the background' with embeddings off, then 'embeddings
    disabled (0 texts embedded)', and said it again when nothing was new.)"""
    off = KtxIndex(project)  # index.embeddings: false
    said = start_line(off, capsys, monkeypatch)
    off.close()
    assert "embeddings off (index.embeddings: false in ktx.yaml): search is lexical only" in said
    assert "background" not in said and "disabled" not in said
    (project / "ktx.yaml").write_text("connections:\n  warehouse:\n    driver: postgres\n")  # embeddings on
    shutil.rmtree(project / ".ktx")  # a first build: every text is new
    on = KtxIndex(project, embedder=HashEmbedder())
    said = start_line(on, capsys, monkeypatch)
    assert "; embedding new texts in the background" in said and "embeddings ready (" in said
    said = start_line(on, capsys, monkeypatch)  # nothing new
    on.close()
    assert "index up to date: 0 added, 0 updated, 0 deleted" in said
    assert "background" not in said and "embeddings ready" not in said
