"""Ctrl-C and SIGTERM as this process received them: the signal handler's record, and a check for long loops.

The handler (installed by the CLI, cli/exits.py) records the signal and raises KeyboardInterrupt wherever the main
thread is. Once in three full runs of the test suite on a slowed 2-core VM, an A/B went on to its last pair after
the Ctrl-C had been recorded: the KeyboardInterrupt was raised somewhere that did not let it through (not found in
perfci's code: no handler there swallows it). So a long loop also asks at each step whether an interrupt came
(`stop_if_interrupted`), and unwinds there if one did.
"""

from __future__ import annotations

_received: list[int] = []  # the signals seen (Ctrl-C or SIGTERM), from the first moment


def on_interrupt(signum: int, frame: object) -> None:
    """Ctrl-C's and SIGTERM's handler: remembered, then a KeyboardInterrupt."""
    _received.append(signum)
    raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether Ctrl-C or SIGTERM was received."""
    return bool(_received)


def stop_if_interrupted() -> None:
    """At a step of a long loop (an A/B's next pair): an interrupt already received unwinds the command here,
    even where its KeyboardInterrupt was lost."""
    if _received:
        raise KeyboardInterrupt
