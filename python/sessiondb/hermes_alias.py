"""Installing ``sessiondb.hermes_state`` as ``hermes_state`` for an unmodified Hermes:
``python3 -m sessiondb.hermes_state --install`` writes two small files into site-packages: a
module holding an import hook, and a ``.pth`` line that registers it at interpreter start. The
hook answers ``import hermes_state`` alone (before Hermes's own file, in a checkout as in a
wheel), and imports nothing until Hermes asks, so other programs start as fast as before."""
from __future__ import annotations

import os
import site
import sys
from typing import List, Optional

HOOK_MODULE = "_sessiondb_hermes_state"
PTH_FILE = "sessiondb-hermes-state.pth"
HOOK_SOURCE = '''"""Written by `python3 -m sessiondb.hermes_state --install`: `import hermes_state` gives
sessiondb.hermes_state (remove with `python3 -m sessiondb.hermes_state --uninstall`)."""
import importlib.abc
import importlib.util
import sys


class Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name == "hermes_state" else None

    def create_module(self, spec):
        import sessiondb.hermes_state
        return sessiondb.hermes_state

    def exec_module(self, module):
        pass


if not any(type(f).__name__ == "Alias" for f in sys.meta_path):
    sys.meta_path.insert(0, Alias())
'''


def target_dir(user: bool) -> str:
    """Where the files go: this interpreter's site-packages (a virtualenv's own), or the user's."""
    if user:
        return site.getusersitepackages()
    paths = [p for p in site.getsitepackages() if os.path.isdir(p)]
    return paths[0] if paths else site.getusersitepackages()


def install(directory: str) -> List[str]:
    os.makedirs(directory, exist_ok=True)
    hook = os.path.join(directory, HOOK_MODULE + ".py")
    pth = os.path.join(directory, PTH_FILE)
    with open(hook, "w", encoding="utf-8") as out:
        out.write(HOOK_SOURCE)
    with open(pth, "w", encoding="utf-8") as out:
        out.write(f"import {HOOK_MODULE}\n")
    return [hook, pth]


def uninstall(directory: str) -> List[str]:
    removed = []
    for name in (HOOK_MODULE + ".py", PTH_FILE):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            os.remove(path)
            removed.append(path)
    return removed


USAGE = "usage: python3 -m sessiondb.hermes_state (--install | --uninstall) [--user] [--target DIR]"


def main(argv: List[str]) -> int:
    args = list(argv)
    user = "--user" in args
    directory: Optional[str] = None
    if "--target" in args:
        at = args.index("--target")
        if at + 1 >= len(args):
            print(USAGE, file=sys.stderr)
            return 2
        directory = args[at + 1]
    directory = directory or target_dir(user)
    if "--install" in args:
        for path in install(directory):
            print(f"wrote {path}")
        print("`import hermes_state` now gives sessiondb.hermes_state in this Python")
        return 0
    if "--uninstall" in args:
        for path in uninstall(directory):
            print(f"removed {path}")
        return 0
    print(USAGE, file=sys.stderr)
    return 2
