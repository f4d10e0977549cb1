"""Hermes' home as upstream's ``get_hermes_home()`` finds it, exactly as the TypeScript side does
(src/hermes-home.ts): ``$HERMES_HOME`` stripped of surrounding whitespace, never ``~``-expanded
(one beginning with ``~`` is refused), else ``~/.hermes``."""
from __future__ import annotations

import json
import os
import pwd

from .errors import InvalidArgumentError


def home_dir() -> str:
    """Node's os.homedir() (and Python's ``Path.home()``): ``$HOME`` when set and not empty,
    else the password database's."""
    return os.environ.get("HOME") or pwd.getpwuid(os.geteuid()).pw_dir


def refuse_tilde(name: str, value: str) -> None:
    """A path from the environment or the command line beginning with ``~``: Hermes never expands
    it (``Path(value)``), so it names a folder ``~`` under the working directory. Refused, naming
    that folder, rather than silently using another file than the agent's."""
    if not value.startswith("~"):
        return
    own = value == "~" or value.startswith("~/")
    example = f", e.g. {os.path.normpath(os.path.join(home_dir(), value[2:]))}" if own else ""
    raise InvalidArgumentError(
        "INVALID_ARGUMENT",
        f"{name} is {json.dumps(value, ensure_ascii=False)}, which begins with \"~\": Hermes does not "
        f"expand \"~\" and would use the folder {os.path.abspath(value)} (under the working directory); "
        f"give an absolute path instead{example}",
    )


def hermes_home(env=None) -> str:
    """Upstream's ``get_hermes_home()``: ``$HERMES_HOME.strip()`` (absolute), else ``~/.hermes``."""
    env = os.environ if env is None else env
    value = (env.get("HERMES_HOME") or "").strip()
    if not value:
        return os.path.join(home_dir(), ".hermes")
    refuse_tilde("HERMES_HOME", value)
    return os.path.abspath(value)


def user_name():
    """This user's login name (Node's os.userInfo()), None when the password database has none."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return None
