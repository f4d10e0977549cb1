"""Handles a forked child must not use as they are: their sockets are the parent's connections,
and the threads reading them did not survive the fork. Each handle registers here; in the child,
``os.register_at_fork`` tells every live one to forget its connection, so its next call connects
anew instead of waiting out its timeout on a reply the parent's reader will take."""
from __future__ import annotations

import os
import weakref
from typing import Any

_handles: "weakref.WeakSet[Any]" = weakref.WeakSet()


def track(handle: Any) -> None:
    """Registers ``handle`` (it has ``_forget_after_fork()``) until ``untrack`` or its collection."""
    _handles.add(handle)


def untrack(handle: Any) -> None:
    _handles.discard(handle)


def _after_fork_in_child() -> None:
    for handle in list(_handles):
        handle._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
