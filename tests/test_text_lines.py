"""`iter_text_lines` reads blocks, but must give exactly the lines of the file split on b"\\n"
(a byte-order mark dropped from the first line, a final "\\r" from every line, no empty last
line after a final "\\n"), and name the line and column of a bad byte."""

import pytest
from hypothesis import given, settings, strategies as st

from dialeval.data.readers import iter_text_lines
from dialeval.errors import InputError

PIECES = [b"a", b"b", b" ", b"\n", b"\r", "\u00e9".encode(), "\u4e2d".encode(), "\u2028".encode()]


def spec(data: bytes) -> list[tuple[int, str]]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    out = []
    for number, raw in enumerate(lines, 1):
        text = raw.decode("utf-8")
        out.append((number, text[:-1] if text.endswith("\r") else text))
    return out


@settings(max_examples=200, deadline=None)
@given(st.booleans(), st.lists(st.sampled_from(PIECES), max_size=60))
def test_lines_are_the_files_lines(tmp_path_factory, bom, pieces):
    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(pieces)
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(data)
    assert list(iter_text_lines(path)) == spec(data)


def test_lines_across_block_boundaries(tmp_path):
    # lines of multi-byte characters spanning several 1 MiB reads
    line = "\u4e2d\u00e9 word " * 7000
    data = "".join(f"{i} {line}\n" for i in range(60)).encode() + b"last"
    path = tmp_path / "big.txt"
    path.write_bytes(data)
    assert list(iter_text_lines(path)) == spec(data)


def test_bad_byte_names_line_and_column(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\nfine\nab\xffc\nmore\n")
    with pytest.raises(InputError, match=r"bad.txt:3: not valid UTF-8: byte 0xff at column 3$"):
        list(iter_text_lines(path))
