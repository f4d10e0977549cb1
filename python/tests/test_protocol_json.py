"""The client's protocol.json (the package's copy of docs/protocol.json): what the TypeScript code
generates, shipped in the package, and the source of the client's operation kinds, error codes
and limits, which agree with TypeScript's; unknown codes map as TypeScript maps them."""
from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from sessiondb import errors, idempotency, protocol
from sessiondb.errors import from_wire
from sessiondb.protocol_description import DESCRIPTION, KEYED_OPS, OPERATION_KINDS

PACKAGE = REPO / "python" / "sessiondb"


def node(script: str, payload=None):
    result = subprocess.run(["node", "--input-type=module", "-e", script], input=json.dumps(payload),
                            capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(result.stdout)


def test_the_package_copy_is_docs_protocol_json_and_what_the_typescript_code_generates():
    generated = node(f"""
import {{ protocolJsonText }} from "{REPO}/dist/src/protocol/protocol-description.js";
console.log(JSON.stringify(protocolJsonText()));
""")
    assert (PACKAGE / "protocol.json").read_text("utf-8") == generated, "stale: run npm run build"
    assert (REPO / "docs" / "protocol.json").read_text("utf-8") == generated


TS_VIEW = f"""
import {{ ERROR_CODES }} from "{REPO}/dist/src/errors.js";
import {{ OPERATIONS, WIRE_ONLY_OPS, isWriteOp }} from "{REPO}/dist/src/operation-catalogue.js";
import {{ CONTROL_OPS }} from "{REPO}/dist/src/protocol/control.js";
import {{ DEFAULT_MAX_FRAME_BYTES, MAX_REPLY_FRAME_BYTES }} from "{REPO}/dist/src/protocol/frame-limits.js";
import {{ PROTOCOL_VERSION }} from "{REPO}/dist/src/protocol/messages.js";
import {{ MAX_KEY_LENGTH }} from "{REPO}/dist/src/operations/idempotency-keys.js";
const kinds = {{}};
for (const [name, f] of Object.entries({{ ...OPERATIONS, ...WIRE_ONLY_OPS }})) kinds[name] = f.kind === "write" ? "write" : "read";
for (const name of CONTROL_OPS) kinds[name] = "control";
console.log(JSON.stringify({{
  kinds, writes: Object.keys(OPERATIONS).filter((n) => isWriteOp(n)), codes: ERROR_CODES, protocol: PROTOCOL_VERSION,
  request: DEFAULT_MAX_FRAME_BYTES, reply: MAX_REPLY_FRAME_BYTES, key: MAX_KEY_LENGTH,
}}));
"""


def test_the_clients_kinds_codes_and_limits_are_typescripts():
    ts = node(TS_VIEW)
    assert OPERATION_KINDS == ts["kinds"]
    assert KEYED_OPS == set(ts["writes"])
    assert set(errors._CLASSES) == set(ts["codes"]) == errors.KNOWN_CODES, "a class for every code, and no other"
    assert protocol.PROTOCOL_VERSION == ts["protocol"]
    assert (protocol.MAX_REQUEST_FRAME_BYTES, protocol.MAX_REPLY_FRAME_BYTES) == (ts["request"], ts["reply"])
    assert idempotency.MAX_KEY_LENGTH == ts["key"]
    frame = DESCRIPTION["frame"]
    assert (protocol.HEADER.size, frame["byteOrder"]) == (frame["headerBytes"], "big-endian")
    assert protocol.HEADER.format == ">I"


def calls_of_operations():
    """Each method of Operations that calls the daemon: (method, op, whether it takes idempotency_key)."""
    tree = ast.parse((PACKAGE / "operations.py").read_text("utf-8"))
    cls = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Operations")
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef):
            continue
        keyed = any(arg.arg == "idempotency_key" for arg in method.args.kwonlyargs)
        for call in ast.walk(method):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "_call"
                    and isinstance(call.args[0], ast.Constant)):
                yield method.name, call.args[0].value, keyed


def test_every_method_calls_an_op_of_the_catalogue_and_takes_a_key_exactly_for_a_write():
    calls = list(calls_of_operations())
    assert len(calls) >= 25
    for method, op, keyed in calls:
        assert OPERATION_KINDS.get(op) in ("read", "write"), f"{method} calls {op}, which is no data op of protocol.json"
        assert keyed == (OPERATION_KINDS[op] == "write"), f"{method} ({op}, a {OPERATION_KINDS[op]}) takes idempotency_key: {keyed}"


def test_an_error_reply_maps_as_typescript_maps_it():
    wires = [
        {"code": "BUSY", "message": "m"}, {"code": "FROM_A_NEWER_DAEMON", "message": "the shard is rebalancing"},
        {"code": 7, "message": "m"}, {"code": None, "message": "m"}, {"message": "m"}, {"code": "TIMEOUT"},
        {"code": "NOT_A_CODE"},
    ]
    ts = node(f"""
import {{ readFileSync }} from "node:fs";
import {{ fromWireError }} from "{REPO}/dist/src/errors.js";
const wires = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(wires.map((w) => {{ const e = fromWireError(w); return [e.code, e.message]; }})));
""", wires)
    for wire, (code, message) in zip(wires, ts):
        err = from_wire(wire)
        assert err.code == code, wire
        # A Python class may put the reference's SQLite message first ("database is locked: …").
        assert str(err) == message or str(err).endswith(": " + message), (wire, str(err), message)


def test_the_package_ships_it(tmp: Path):
    """setuptools' build of the package (what a wheel holds), from a copy of the project, has
    protocol.json beside the code."""
    project = tmp / "project"
    shutil.copytree(REPO / "python", project, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    out = tmp / "lib"
    subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py", "--build-lib", str(out)],
                   cwd=project, check=True, capture_output=True)
    assert (out / "sessiondb" / "protocol.json").read_text("utf-8") == (PACKAGE / "protocol.json").read_text("utf-8")
    assert (out / "sessiondb" / "protocol_description.py").exists()
