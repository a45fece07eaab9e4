"""background.py alone: threads are joined once a stop is asked, and none starts after it."""

import threading

from ktx_index.background import BackgroundThreads


def test_a_stop_joins_the_threads_that_heed_it_and_starts_nothing_after():
    threads = BackgroundThreads()
    began = threading.Event()

    def work() -> None:
        began.set()
        threads.stop.wait(10)  # a writer finishing its batch once the stop is asked

    running = threads.start("work", work)
    assert began.wait(5)
    threads.stop_and_join(5)
    assert threads.stop.is_set() and not running.is_alive()
    ran: list[str] = []
    late = threads.start("late", lambda: ran.append("late"))
    late.join(5)
    assert ran == []  # asked while closing: it would use what the close is taking down


def test_a_thread_still_running_past_the_timeout_is_kept_for_the_next_join():
    threads = BackgroundThreads()
    release = threading.Event()
    slow = threads.start("slow", lambda: release.wait(10))
    threads.stop_and_join(0.01)
    assert slow.is_alive()
    release.set()
    threads.stop_and_join(5)
    assert not slow.is_alive()
