"""Stand-in for Hermes 0.19.0's tools/interrupt.py: the global interrupt the agent sets on /stop."""

import threading

_interrupt_event = threading.Event()


def set_interrupt(active: bool) -> None:
    if active:
        _interrupt_event.set()
    else:
        _interrupt_event.clear()


def is_interrupted() -> bool:
    return _interrupt_event.is_set()
