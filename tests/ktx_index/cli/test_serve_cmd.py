"""``serve``'s options are checked before any work: HTTP-only options with stdio, --no-build with --watch, an
unsafe bind."""

from projects import run_cli


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
