"""reports.py: the typed reports' one behaviour, progress told to every caller waiting on one operation."""

from ktx_index.reports import ProgressListeners


def test_progress_reaches_every_listener_and_a_failing_one_fails_no_other():
    heard: list[tuple[str, str, int]] = []
    listeners = ProgressListeners()

    def broken(stage: str, done: int, total: int) -> None:
        raise RuntimeError("client went away")

    first = lambda stage, done, total: heard.append(("first", stage, done))  # noqa: E731
    listeners.add(broken)
    listeners.add(first)
    listeners("parse", 1, 3)
    listeners.remove(broken)
    listeners.add(lambda stage, done, total: heard.append(("second", stage, done)))
    listeners("parse", 3, 3)
    assert heard == [("first", "parse", 1), ("first", "parse", 3), ("second", "parse", 3)]
