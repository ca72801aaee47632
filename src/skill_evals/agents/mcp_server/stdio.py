"""The stdio transport: one JSON-RPC message per line in and out, logs on stderr only.

No timeouts here: the client started this process and owns both pipes, so waiting for its next
line is the normal state, and EOF (or a closed stdout) ends the session. Each line is bounded
(``MAX_MESSAGE_BYTES``); a longer one is skipped in bounded chunks and answered with one parse
error, and whatever a line holds gets a JSON-RPC answer, never an end of the server.
"""

from __future__ import annotations

import os
import sys
from typing import Any, BinaryIO, TextIO

from .jsonrpc import MAX_MESSAGE_BYTES, MessageError, encode_message, parse_error
from .protocol import Session, SkillServer


def serve_stdio(
    server: SkillServer,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    stderr: TextIO | None = None,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> None:
    """Serve one session over stdio until EOF on stdin or a closed stdout."""
    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = stdout if stdout is not None else sys.stdout.buffer
    log = stderr if stderr is not None else sys.stderr
    names = ", ".join(s.name for s in server.skills)  # names are [A-Za-z0-9-] only
    print(f"skill-evals mcp-serve: serving {names} over stdio", file=log, flush=True)
    session = Session()
    try:
        while True:
            line = reader.readline(max_message_bytes + 1)
            if not line:
                return
            if len(line) > max_message_bytes and not line.endswith(b"\n"):
                _skip_rest_of_line(reader, max_message_bytes)
                response: Any = parse_error(
                    MessageError(f"message longer than {max_message_bytes} bytes")
                )
            else:
                line = line.removesuffix(b"\n").removesuffix(b"\r")
                if not line.strip(b" \t\r"):
                    continue
                response = server.handle_bytes(line, session)
            if response is not None:
                writer.write(encode_message(response) + b"\n")
                writer.flush()
    except BrokenPipeError:
        # The client closed our stdout: a normal end. Point fd 1 at /dev/null so the
        # interpreter's final flush of sys.stdout cannot fail once more on the way out.
        if stdout is None:
            _silence_stdout()
    except KeyboardInterrupt:
        return  # the user stopped us: a normal end of a stdio server


def _skip_rest_of_line(reader: BinaryIO, chunk: int) -> None:
    while True:
        part = reader.readline(chunk)
        if not part or part.endswith(b"\n"):
            return


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
