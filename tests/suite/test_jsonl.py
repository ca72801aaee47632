"""The strict, bounded JSONL reader (docs/inputs.md): one test per rule plus property tests."""

from __future__ import annotations

import itertools
import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skill_evals.errors import InvalidInput
from skill_evals.suite import jsonl
from skill_evals.suite.jsonl import (
    MAX_SAFE_INTEGER,
    Record,
    check_regular_file,
    iter_jsonl,
    loads_strict,
    read_jsonl,
)

SECRET = "SECRET-PROMPT-TEXT"


def _read(path: Path, **kw: Any) -> list[Record]:
    return list(read_jsonl(path, **kw))


def _error(path: Path, **kw: Any) -> str:
    with pytest.raises(InvalidInput) as info:
        _read(path, **kw)
    assert info.value.exit_code == 5
    return str(info.value)


def _write(tmp_path: Path, data: bytes, name: str = "in.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _rec(i: int = 0) -> bytes:
    return json.dumps({"id": f"c{i}", "prompt": SECRET}).encode()


def _assert_located(message: str, path: Path, line: int) -> None:
    assert message.startswith(f"{path}:{line}: "), message
    assert SECRET not in message


# ------------------------------------------------------------------------- regular file only


def test_symlink_is_rejected(tmp_path: Path) -> None:
    target = _write(tmp_path, _rec() + b"\n", "target.jsonl")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    message = _error(link)
    assert str(link) in message and "symlink" in message


def test_fifo_is_rejected_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    outcome: list[str] = []

    def attempt() -> None:
        try:
            _read(fifo)
        except InvalidInput as exc:
            outcome.append(str(exc))

    # Opening a FIFO with no writer would block forever; the reader must never open it.
    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=5)
    if worker.is_alive():  # unblock the stuck reader before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a FIFO blocked")
    assert outcome and "FIFO" in outcome[0] and str(fifo) in outcome[0]


def test_directory_is_rejected(tmp_path: Path) -> None:
    directory = tmp_path / "dir.jsonl"
    directory.mkdir()
    assert "directory" in _error(directory)


def test_device_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="device"):
        check_regular_file(Path("/dev/null"), "cases file")


def test_socket_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    sock = socket.socket(socket.AF_UNIX)
    monkeypatch.chdir(tmp_path)  # a relative name: a socket path holds at most 107 bytes
    try:
        sock.bind(path.name)
        with pytest.raises(InvalidInput, match="socket"):
            check_regular_file(path)
    finally:
        sock.close()


def test_missing_file_is_invalid_input(tmp_path: Path) -> None:
    message = _error(tmp_path / "nope.jsonl")
    assert "does not exist" in message


def test_file_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "MAX_FILE_BYTES", 100)
    ok = _write(tmp_path, (b"{}\n" * 33) + b"\n", "ok.jsonl")  # exactly 100 bytes
    assert len(_read(ok)) == 33
    big = _write(tmp_path, b"{}\n" * 34, "big.jsonl")
    message = _error(big)
    assert str(big) in message and "100" in message


def test_blank_lines_count_toward_the_file_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_FILE_BYTES", 100)
    path = _write(tmp_path, b"{}\n" + b" " * 120 + b"\n")
    assert "100" in _error(path)


def test_file_growing_past_the_cap_while_read_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_FILE_BYTES", 1000)
    path = _write(tmp_path, b"{}\n" * 10)
    fd = jsonl.open_regular_file(path)
    with path.open("ab") as fh:  # grows after the size check
        fh.write(b"{}\n" * 400)
    with pytest.raises(InvalidInput, match="exceeds the limit"):
        list(iter_jsonl(jsonl._read_chunks(fd, path, "file"), path))


# ------------------------------------------------------------------------------- records


def test_record_cap_is_enforced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "MAX_RECORD_BYTES", 64)
    fits = b'{"k":"' + b"a" * 56 + b'"}'
    assert len(fits) == 64
    path = _write(tmp_path, fits + b"\r\n" + b'{"k":"' + b"a" * 57 + b'"}\n')
    _assert_located(_error(path), path, 2)


def test_real_4mib_record_limit(tmp_path: Path) -> None:
    payload = b'{"k":"' + b"a" * (jsonl.MAX_RECORD_BYTES - 8) + b'"}'
    assert len(payload) == jsonl.MAX_RECORD_BYTES
    path = _write(tmp_path, payload + b"\n" + payload[:-2] + b'a"}\n')
    message = _error(path)
    _assert_located(message, path, 2)
    assert "4194304" in message


def test_unterminated_huge_line_is_not_buffered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cap is hit while the line is still being read, from a chunk iterator that would
    # otherwise go on forever: the reader must stop without waiting for the end of the line.
    monkeypatch.setattr(jsonl, "MAX_RECORD_BYTES", 1000)

    def endless() -> Any:
        yield b"{}\n{}\n"
        while True:
            yield b"x" * 256

    with pytest.raises(InvalidInput) as info:
        list(iter_jsonl(endless(), tmp_path / "f.jsonl"))
    assert str(info.value).startswith(f"{tmp_path / 'f.jsonl'}:3: record exceeds 1000")


def test_long_whitespace_only_line_is_blank(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_RECORD_BYTES", 16)
    chunks = [b"{}\n", b" " * 40, b"\t" * 40, b"  \n{}\n"]
    records = list(iter_jsonl(chunks, tmp_path / "f.jsonl"))
    assert [r.line for r in records] == [1, 3]
    with pytest.raises(InvalidInput, match=r":2: record exceeds 16"):
        list(iter_jsonl([b"{}\n", b" " * 40, b' {"a":1}\n'], tmp_path / "f.jsonl"))


def test_crlf_and_lf_line_endings(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a":1}\r\n{"a":2}\n{"a":3}\r\n{"a":4}')
    assert [(r.line, r.value["a"]) for r in _read(path)] == [(1, 1), (2, 2), (3, 3), (4, 4)]


def test_only_one_trailing_cr_is_removed_and_the_rest_is_json_whitespace(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, b'{"a":1}\r\r\n')
    assert _read(path)[0].value == {"a": 1}


def test_lone_cr_is_not_a_line_break(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a":1}\r{"a":2}\n')
    _assert_located(_error(path), path, 1)


def test_unicode_separators_inside_a_record_are_data(tmp_path: Path) -> None:
    text = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg"
    raw = json.dumps({"prompt": text}, ensure_ascii=False).encode("utf-8")
    # Raw U+2028/U+2029/U+0085 bytes in the line; the control chars are escaped by json.dumps.
    assert "\u2028".encode() in raw and "\x85".encode() in raw
    path = _write(tmp_path, raw + b"\n" + raw + b"\n")
    records = _read(path)
    assert [r.line for r in records] == [1, 2]
    assert records[0].value["prompt"] == text


def test_blank_and_whitespace_only_lines_are_skipped_but_numbered(tmp_path: Path) -> None:
    path = _write(tmp_path, b'\n   \n\t\r\n{"a":1}\n\n \t \n{"a":2}\n\n')
    assert [(r.line, r.value) for r in _read(path)] == [(4, {"a": 1}), (7, {"a": 2})]


def test_non_json_whitespace_line_is_not_blank(tmp_path: Path) -> None:
    # U+00A0 and form feed are not JSON whitespace: such a line is an invalid record.
    path = _write(tmp_path, b"{}\n\xc2\xa0\n")
    _assert_located(_error(path), path, 2)
    path = _write(tmp_path, b"{}\n\x0c\n", "ff.jsonl")
    _assert_located(_error(path), path, 2)


def test_bom_at_start_is_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path, b'\xef\xbb\xbf{"a":1}\n{"a":2}\n')
    assert [r.value["a"] for r in _read(path)] == [1, 2]


def test_bom_split_across_chunks_is_skipped(tmp_path: Path) -> None:
    records = list(iter_jsonl([b"\xef", b"\xbb", b'\xbf{"a":1}\n'], tmp_path / "f.jsonl"))
    assert records == [Record(1, {"a": 1})]


def test_bom_only_file_is_empty(tmp_path: Path) -> None:
    assert _read(_write(tmp_path, b"\xef\xbb\xbf")) == []
    assert _read(_write(tmp_path, b"", "empty.jsonl")) == []


def test_bom_later_in_the_file_is_invalid(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a":1}\n\xef\xbb\xbf{"a":2}\n')
    _assert_located(_error(path), path, 2)


def test_invalid_utf8(tmp_path: Path) -> None:
    bad = b'{"prompt":"' + SECRET.encode() + b'\xff"}'
    path = _write(tmp_path, _rec() + b"\n" + bad + b"\n")
    message = _error(path)
    _assert_located(message, path, 2)
    assert "UTF-8" in message


def test_overlong_and_surrogate_utf8_are_invalid(tmp_path: Path) -> None:
    for i, bad in enumerate([b"\xc0\xaf", b"\xed\xa0\x80"]):
        path = _write(tmp_path, b'{"p":"' + bad + b'"}\n', f"b{i}.jsonl")
        assert "UTF-8" in _error(path)


def test_escaped_lone_surrogate_is_invalid(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"p":"x\\ud800y"}\n')
    _assert_located(_error(path), path, 1)
    # A proper pair is fine.
    ok = _write(tmp_path, b'{"p":"\\ud83d\\ude00"}\n', "ok.jsonl")
    assert _read(ok)[0].value == {"p": "\U0001f600"}


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_rejected(tmp_path: Path, token: str) -> None:
    path = _write(tmp_path, _rec() + b"\n" + f'{{"p":"{SECRET}","x":{token}}}'.encode() + b"\n")
    message = _error(path)
    _assert_located(message, path, 2)
    assert token.lstrip("-") in message


def test_float_overflowing_to_infinity_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"x":1e400}\n')
    _assert_located(_error(path), path, 1)
    assert _read(_write(tmp_path, b'{"x":1e300,"y":-0.0}\n', "ok.jsonl"))[0].value["x"] == 1e300


def test_duplicate_keys_are_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, f'{{"caseId":"{SECRET}","caseId":"b"}}\n'.encode())
    message = _error(path)
    _assert_located(message, path, 1)
    assert "duplicate" in message and '"caseId"' in message


def test_nested_duplicate_keys_are_rejected_without_echoing_odd_keys(tmp_path: Path) -> None:
    key = SECRET + " with spaces"
    record = json.dumps({"a": {}}).replace("{}", f'{{"{key}":1,"{key}":2}}')
    path = _write(tmp_path, record.encode())
    message = _error(path)
    assert "duplicate" in message and SECRET not in message


@pytest.mark.parametrize(
    ("literal", "ok"),
    [
        (str(MAX_SAFE_INTEGER), True),
        (str(-MAX_SAFE_INTEGER), True),
        (str(MAX_SAFE_INTEGER + 1), False),
        (str(-MAX_SAFE_INTEGER - 1), False),
        ("1" + "0" * 5000, False),
        ("0", True),
        ("-0", True),
    ],
)
def test_unsafe_integers(tmp_path: Path, literal: str, ok: bool) -> None:
    path = _write(tmp_path, f'{{"p":"{SECRET}","n":[{{"x":{literal}}}]}}\n'.encode())
    if ok:
        assert _read(path)[0].value["n"][0]["x"] == int(literal)
    else:
        message = _error(path)
        _assert_located(message, path, 1)
        assert "9007199254740991" in message


@pytest.mark.parametrize(
    ("text", "kind"),
    [("[1]", "array"), ('"s"', "string"), ("3", "number"), ("null", "null"), ("true", "true")],
)
def test_each_record_must_be_an_object(tmp_path: Path, text: str, kind: str) -> None:
    path = _write(tmp_path, b"{}\n" + text.encode() + b"\n")
    message = _error(path)
    _assert_located(message, path, 2)
    assert "object" in message and kind in message


def test_syntax_error_names_line_not_content(tmp_path: Path) -> None:
    path = _write(tmp_path, b"{}\n{}\n" + f'{{"prompt": "{SECRET}",}}'.encode() + b"\n")
    message = _error(path)
    _assert_located(message, path, 3)
    assert "invalid JSON" in message


def test_trailing_data_after_the_object_is_invalid(tmp_path: Path) -> None:
    path = _write(tmp_path, b"{} {}\n")
    _assert_located(_error(path), path, 1)


def test_deep_nesting_is_invalid_input(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    _assert_located(_error(path), path, 1)


def test_population_bound(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\n".join([_rec(i) for i in range(3)]) + b"\n\n" + b"{bad json\n")
    message = _error(path, max_records=3)
    # Reading stops at the first record past the bound (line 5), before even parsing it.
    _assert_located(message, path, 5)
    assert "3" in message and "bound" in message


def test_population_bound_stops_reading_lazily(tmp_path: Path) -> None:
    path = _write(tmp_path, b"{}\n{}\n{}\n")
    records = read_jsonl(path, max_records=2)
    assert next(records).line == 1 and next(records).line == 2
    with pytest.raises(InvalidInput, match=r":3: more than 2 records"):
        next(records)
    assert len(_read(path, max_records=3)) == 3


def test_regular_file_errors_raise_on_call(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        read_jsonl(tmp_path)


# ----------------------------------------------------------------------------- loads_strict


def test_loads_strict_accepts_plain_json() -> None:
    assert loads_strict(' {"a": [1, 2.5, true, null, "x"], "b": {}} ') == {
        "a": [1, 2.5, True, None, "x"],
        "b": {},
    }


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "[Infinity]",
        '{"a":-Infinity}',
        '{"a":1,"a":1}',
        "9007199254740992",
        "1e999",
        "",
        "[",
        "\ufeff{}",
        '"\\udc00"',
    ],
)
def test_loads_strict_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        loads_strict(text)


def test_loads_strict_error_does_not_echo_input() -> None:
    with pytest.raises(ValueError) as info:
        loads_strict(f'{{"output": "{SECRET}" oops}}')
    assert SECRET not in str(info.value)


# ------------------------------------------------------------------------- property tests

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=5)


@settings(max_examples=100, deadline=None)
@given(
    objects=st.lists(json_objects, max_size=8),
    bom=st.booleans(),
    crlf=st.lists(st.booleans(), min_size=8, max_size=8),
    blanks=st.lists(st.sampled_from(["", " ", "\t", " \t ", "\r"]), min_size=9, max_size=9),
    final_newline=st.booleans(),
    ascii_only=st.booleans(),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_any_objects_round_trip(
    objects: list[dict[str, Any]],
    bom: bool,
    crlf: list[bool],
    blanks: list[str],
    final_newline: bool,
    ascii_only: bool,
    chunk: int,
) -> None:
    lines: list[str] = []
    expected_lines: list[int] = []
    for i, obj in enumerate(objects):
        if blanks[i]:
            lines.append(blanks[i])
        lines.append(json.dumps(obj, ensure_ascii=ascii_only) + ("\r" if crlf[i] else ""))
        expected_lines.append(len(lines))
    if blanks[8]:
        lines.append(blanks[8])
    text = "\n".join(lines) + ("\n" if final_newline else "")
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    records = list(
        iter_jsonl((data[i : i + chunk] for i in range(0, len(data), chunk)), Path("p.jsonl"))
    )
    assert [r.value for r in records] == objects
    assert [r.line for r in records] == expected_lines


@settings(max_examples=300)
@given(data=st.binary(max_size=300), chunk=st.integers(min_value=1, max_value=50))
def test_random_bytes_only_ever_raise_invalid_input(data: bytes, chunk: int) -> None:
    try:
        records = list(
            iter_jsonl((data[i : i + chunk] for i in range(0, len(data), chunk)), Path("r.jsonl"))
        )
    except InvalidInput as exc:
        assert str(exc).startswith("r.jsonl:")
    else:
        assert all(type(r.value) is dict for r in records)


@settings(max_examples=200)
@given(
    text=st.text(alphabet=st.sampled_from(list('{}[]":,0123456789-.eE tfnrul\\aN')), max_size=60)
)
def test_json_like_garbage_only_raises_invalid_input(text: str) -> None:
    try:
        list(iter_jsonl([text.encode()], Path("g.jsonl")))
    except InvalidInput as exc:
        assert str(exc).startswith("g.jsonl:")


@pytest.mark.parametrize(
    "text",
    ['{"a":"\x01"}', '{"a":1,}', '{"a" 1}', "[", '"\\x"', '{"a":1}x', '{"a":"\ud800'],
)
def test_json_error_messages_never_double_a_word(text: str) -> None:
    with pytest.raises(ValueError) as info:
        jsonl.loads_strict(text)
    words = str(info.value).split()
    assert all(a != b for a, b in itertools.pairwise(words)), str(info.value)
    assert str(info.value).startswith("invalid JSON: ")
