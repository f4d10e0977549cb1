"""``~`` in a path, resolved exactly as the TypeScript side does (src/expand-home.ts), so both
sides name the same file and so the same daemon socket."""
from __future__ import annotations

import os
import pwd
from typing import Optional


def expand_home(path: str) -> str:
    """``~``, ``~/…`` and ``~<own user name>/…`` expanded as the TypeScript side does
    (src/expand-home.ts): ``.env`` files and systemd units pass ``HERMES_HOME=~/.hermes``
    literally. Another user's ``~name`` stays as it is (the TypeScript side cannot look it up, so
    neither does this, unlike ``os.path.expanduser``)."""
    if not path.startswith("~"):
        return path
    name, _, rest = path[1:].partition("/")
    if name != "" and name != user_name():
        return path
    # Node's path.join: "~//x" is under the home directory too, not "/x".
    return home_dir() if rest == "" else os.path.normpath(f"{home_dir()}/{rest}")


def home_dir() -> str:
    """Node's os.homedir(): ``$HOME`` when set and not empty, else the password database's."""
    return os.environ.get("HOME") or pwd.getpwuid(os.geteuid()).pw_dir


def user_name() -> Optional[str]:
    """This user's login name (Node's os.userInfo()), None when the password database has none."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return None
