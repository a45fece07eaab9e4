"""The watcher's state machine (``watcher/states.py:decide``) on its own: no thread, no filesystem, no clock.

Each row of the tables is one transition: the phase, what the loop saw (or the step it just ran and how that
went), the action decided and the phase it leaves. ``wake_up`` then chains decisions the way the loop does,
so whole wake-ups (a commit and its embedding slice) are checked too, over every combination of inputs."""

from __future__ import annotations

import itertools

import pytest

from ktx_index.watcher import Action, Inputs, Outcome, Phase, decide

A, P = Action, Phase
DONE, MORE, FAILED, STOPPED = Outcome.DONE, Outcome.MORE, Outcome.FAILED, Outcome.STOPPED
NOT_DUE = {"retry_due": False}

WAKE_UPS = [
    # (why, phase, inputs, action, next phase)
    ("the catch-up commits on the first wake-up", P.CATCHING_UP, {}, A.COMMIT, P.CATCHING_UP),
    ("a catch-up waits out a failure's backoff", P.CATCHING_UP, NOT_DUE, A.WAIT, P.CATCHING_UP),
    ("events during a catch-up keep the full plan", P.CATCHING_UP, {"events": True}, A.COMMIT, P.CATCHING_UP),
    ("events on an idle watcher: a targeted commit", P.IDLE, {"events": True}, A.COMMIT, P.DIRTY),
    ("events come before an embedding backlog", P.BACKLOG, {"events": True}, A.COMMIT, P.DIRTY),
    ("events during a backoff are owed, not run", P.IDLE, {"events": True, **NOT_DUE}, A.WAIT, P.DIRTY),
    ("a dirty watcher in backoff waits", P.DIRTY, NOT_DUE, A.WAIT, P.DIRTY),
    ("a dirty watcher commits once the retry is due", P.DIRTY, {}, A.COMMIT, P.DIRTY),
    ("a ktx.yaml change plans in full", P.IDLE, {"config_changed": True}, A.COMMIT, P.CATCHING_UP),
    ("a ktx.yaml change outranks targeted paths", P.DIRTY, {"config_changed": True}, A.COMMIT, P.CATCHING_UP),
    ("a backlog is embedded slice by slice", P.BACKLOG, {}, A.EMBED, P.BACKLOG),
    ("a backlog waits out a failure's backoff", P.BACKLOG, NOT_DUE, A.WAIT, P.BACKLOG),
    ("a backlog comes before the idle plan", P.BACKLOG, {"idle_plan_due": True}, A.EMBED, P.BACKLOG),
    ("nothing owed: wait", P.IDLE, {}, A.WAIT, P.IDLE),
    ("idle long enough: the safety-net full plan", P.IDLE, {"idle_plan_due": True}, A.COMMIT, P.CATCHING_UP),
    ("the idle plan waits out a backoff", P.IDLE, {"idle_plan_due": True, **NOT_DUE}, A.WAIT, P.IDLE),
    ("a tree appeared: watch it, then catch up", P.DIRTY, {"trees_changed": True}, A.RESTART, P.CATCHING_UP),
    ("a tree vanished, even in backoff", P.BACKLOG, {"trees_changed": True, **NOT_DUE}, A.RESTART, P.CATCHING_UP),
    ("a stop: start nothing", P.DIRTY, {"stopping": True, "events": True}, A.WAIT, P.STOPPING),
    ("a stop outranks a new tree", P.IDLE, {"stopping": True, "trees_changed": True}, A.WAIT, P.STOPPING),
    ("still stopping", P.STOPPING, {"stopping": True, "idle_plan_due": True}, A.WAIT, P.STOPPING),
    ("a stop withdrawn: plan in full", P.STOPPING, {}, A.COMMIT, P.CATCHING_UP),
]

AFTER_STEPS = [
    # (why, phase, step just run, its outcome, warmed, action, next phase)
    ("a commit's first slice follows at once", P.DIRTY, A.COMMIT, DONE, True, A.EMBED, P.BACKLOG),
    ("the idle plan's commit is embedded too", P.CATCHING_UP, A.COMMIT, DONE, True, A.EMBED, P.BACKLOG),
    ("the first commit warms the parsers first", P.CATCHING_UP, A.COMMIT, DONE, False, A.WARM, P.BACKLOG),
    ("after warming, the first slice", P.BACKLOG, A.WARM, DONE, True, A.EMBED, P.BACKLOG),
    ("a failed warm does not hold up embedding", P.BACKLOG, A.WARM, FAILED, False, A.EMBED, P.BACKLOG),
    ("a failed commit is retried in full", P.DIRTY, A.COMMIT, FAILED, True, A.WAIT, P.CATCHING_UP),
    ("a failed catch-up stays a catch-up", P.CATCHING_UP, A.COMMIT, FAILED, False, A.WAIT, P.CATCHING_UP),
    ("texts still pending: the next slice waits", P.BACKLOG, A.EMBED, MORE, True, A.WAIT, P.BACKLOG),
    ("the backlog is done: idle", P.BACKLOG, A.EMBED, DONE, True, A.WAIT, P.IDLE),
    ("a failed slice keeps the backlog owed", P.BACKLOG, A.EMBED, FAILED, True, A.WAIT, P.BACKLOG),
    ("a commit stopped: start nothing", P.DIRTY, A.COMMIT, STOPPED, True, A.WAIT, P.STOPPING),
    ("a slice stopped: start nothing", P.BACKLOG, A.EMBED, STOPPED, True, A.WAIT, P.STOPPING),
]


@pytest.mark.parametrize(("why", "phase", "inputs", "action", "after"), WAKE_UPS, ids=[r[0] for r in WAKE_UPS])
def test_wake_up(why: str, phase: Phase, inputs: dict[str, bool], action: Action, after: Phase) -> None:
    assert decide(phase, Inputs(**inputs)) == (action, after), why


@pytest.mark.parametrize(
    ("why", "phase", "step", "outcome", "warmed", "action", "after"), AFTER_STEPS, ids=[r[0] for r in AFTER_STEPS]
)
def test_after_a_step(
    why: str, phase: Phase, step: Action, outcome: Outcome, warmed: bool, action: Action, after: Phase
) -> None:
    assert decide(phase, Inputs(warmed=warmed, after=(step, outcome))) == (action, after), why


def test_a_stop_requested_during_a_step_ends_the_chain() -> None:
    assert decide(P.DIRTY, Inputs(stopping=True, after=(A.COMMIT, DONE))) == (A.WAIT, P.STOPPING)


def wake_up(phase: Phase, seen: Inputs, outcomes: dict[Action, Outcome]) -> tuple[list[Action], Phase]:
    """The steps one wake-up runs, as the loop chains them (each step's outcome scripted), and the phase left."""
    steps: list[Action] = []
    warmed = seen.warmed
    action, phase = decide(phase, seen)
    while action not in (A.WAIT, A.RESTART):
        assert len(steps) < 5, f"a wake-up that does not end: {steps}"
        steps.append(action)
        outcome = outcomes.get(action, DONE)
        warmed = warmed or (action is A.WARM and outcome is DONE)
        action, phase = decide(phase, Inputs(warmed=warmed, after=(action, outcome)))
    return steps + ([action] if action is A.RESTART else []), phase


def test_whole_wake_ups() -> None:
    assert wake_up(P.CATCHING_UP, Inputs(warmed=False), {}) == ([A.COMMIT, A.WARM, A.EMBED], P.IDLE)
    assert wake_up(P.IDLE, Inputs(idle_plan_due=True), {A.EMBED: MORE}) == ([A.COMMIT, A.EMBED], P.BACKLOG)
    assert wake_up(P.BACKLOG, Inputs(), {A.EMBED: MORE}) == ([A.EMBED], P.BACKLOG)  # one slice per wake-up
    assert wake_up(P.DIRTY, Inputs(), {A.COMMIT: FAILED}) == ([A.COMMIT], P.CATCHING_UP)
    assert wake_up(P.IDLE, Inputs(events=True, trees_changed=True), {}) == ([A.RESTART], P.CATCHING_UP)


SEEN = [
    Inputs(**dict(zip(names, values, strict=True)))
    for names in [("events", "config_changed", "trees_changed", "stopping", "retry_due", "idle_plan_due", "warmed")]
    for values in itertools.product([False, True], repeat=len(names))
]
SCRIPTS = [
    dict(zip((A.COMMIT, A.WARM, A.EMBED), outcomes, strict=True)) for outcomes in itertools.product(Outcome, repeat=3)
]


@pytest.mark.parametrize("phase", list(Phase))
def test_every_commit_is_followed_by_an_embedding_slice_unless_stopped(phase: Phase) -> None:
    """Over every combination of inputs and outcomes: a wake-up ends, and a commit that went through is always
    followed by an embedding slice in the same wake-up (the idle plan once committed without one)."""
    for seen, script in itertools.product(SEEN, SCRIPTS):
        steps, after = wake_up(phase, seen, script)
        if A.COMMIT in steps and script[A.COMMIT] is DONE:
            assert A.EMBED in steps or (A.WARM in steps and script[A.WARM] is STOPPED), (phase, seen, script)
        if seen.stopping:
            assert (steps, after) == ([], P.STOPPING)
        if not seen.retry_due and not seen.trees_changed:
            assert steps == []  # nothing runs during a backoff
