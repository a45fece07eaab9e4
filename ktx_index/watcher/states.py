"""The watcher's decisions, apart from its threads and files: what it owes (``Phase``), what it saw at a
wake-up (``Inputs``), what it does next (``Action``) and how a step went (``Outcome``). ``decide`` is pure, so
every transition is tested without a filesystem (tests/ktx_index/watcher/test_states.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Phase(Enum):
    """What the watcher owes the files: the loop's one piece of state besides the paths gathered for a plan."""

    CATCHING_UP = "catching_up"  # a full plan: at start, after a restart, a ktx.yaml change, a failed commit, idle
    DIRTY = "dirty"  # events since the last commit: a commit planned from the paths they named
    BACKLOG = "backlog"  # committed, some texts still without vectors: an embedding slice
    IDLE = "idle"  # nothing: wait for events, and plan in full every idle_plan_s (a change no event reported)
    STOPPING = "stopping"  # a stop was requested: start nothing, the watch ends at its next wake-up


class Action(Enum):
    WAIT = "wait"  # until the next wake-up (events, or loop.IDLE_WAKE_MS without any)
    COMMIT = "commit"  # documents and lexical index (Watcher._commit): searchable by words at once
    WARM = "warm"  # parse shared files ahead, once, after the first commit (Builder.warm)
    EMBED = "embed"  # one time-boxed slice of the texts left pending (Watcher._embed_slice)
    RESTART = "restart"  # a watched tree appeared or vanished: watch the new set, then catch up


class Outcome(Enum):
    DONE = "done"
    MORE = "more"  # done, and more of the same is owed (texts still pending after an embedding slice)
    FAILED = "failed"  # recorded in the state file; tried again once the backoff is over
    STOPPED = "stopped"  # a requested stop, not a failure


@dataclass(frozen=True)
class Inputs:
    """What the loop saw at a wake-up, or (``after``) the step it just ran and how that went."""

    events: bool = False  # watched files changed
    config_changed: bool = False  # ktx.yaml's stat changed (it is polled, not watched)
    trees_changed: bool = False  # a watched tree appeared or vanished
    stopping: bool = False
    retry_due: bool = True  # no failure's backoff is running
    idle_plan_due: bool = False  # idle_plan_s since the last full plan
    warmed: bool = True  # Builder.warm has run once
    after: tuple[Action, Outcome] | None = None


def decide(phase: Phase, seen: Inputs) -> tuple[Action, Phase]:
    """The next step and the phase it leaves; pure, so every transition is unit-tested without threads or files.

    At a wake-up what was seen raises what is owed (a full plan outranks a targeted one); then a commit comes
    before an embedding slice, a slice before the idle plan, and nothing runs while a failure's backoff does.
    After a step the next one is chained at once: a commit is followed by its first embedding slice (an edit's
    own texts), whichever plan made it, so a commit is never left searchable by words alone."""
    if seen.stopping or (seen.after is not None and seen.after[1] is Outcome.STOPPED):
        return Action.WAIT, Phase.STOPPING
    if seen.after is not None:
        action, outcome = seen.after
        if action is Action.COMMIT and outcome is Outcome.FAILED:
            return Action.WAIT, Phase.CATCHING_UP  # the paths it was planned from are dropped: retried in full
        if action is Action.COMMIT and not seen.warmed:
            return Action.WARM, Phase.BACKLOG
        if action in (Action.COMMIT, Action.WARM):  # a failed warm is logged and tried after the next commit
            return Action.EMBED, Phase.BACKLOG
        return Action.WAIT, Phase.IDLE if outcome is Outcome.DONE else Phase.BACKLOG  # a failed slice: retried
    if phase is Phase.STOPPING:
        phase = Phase.CATCHING_UP  # a stop withdrawn: what was owed meanwhile is unknown
    if seen.trees_changed:
        return Action.RESTART, Phase.CATCHING_UP  # files already inside a new tree raise no event
    if seen.config_changed:
        phase = Phase.CATCHING_UP
    elif seen.events and phase is not Phase.CATCHING_UP:
        phase = Phase.DIRTY
    if not seen.retry_due:
        return Action.WAIT, phase
    if phase in (Phase.CATCHING_UP, Phase.DIRTY):
        return Action.COMMIT, phase
    if phase is Phase.BACKLOG:
        return Action.EMBED, phase
    if seen.idle_plan_due:
        return Action.COMMIT, Phase.CATCHING_UP
    return Action.WAIT, Phase.IDLE
