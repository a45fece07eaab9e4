"""The watch daemon (loop.py: Watcher, threads and files) and its decisions (states.py: a pure state machine)."""

from ktx_index.watcher.loop import Watcher, relevant
from ktx_index.watcher.states import Action, Inputs, Outcome, Phase, decide

__all__ = ["Action", "Inputs", "Outcome", "Phase", "Watcher", "decide", "relevant"]
