"""archiver.tar: ustar/pax headers against the vectors, Python's tarfile and GNU tar's field style."""

from __future__ import annotations

import contextlib
import io
import tarfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver import tar
from tests.gwtar.test_vectors import vector_rows

NAME_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/")
segment = st.text(NAME_CHARS, min_size=1, max_size=40).filter(lambda s: s not in (".", ".."))
names = st.lists(segment, min_size=1, max_size=8).map("/".join)


@pytest.mark.parametrize("row", vector_rows("ustar_names.json", "split"))
def test_split_name_vectors(row: dict) -> None:
    want = None if row["prefix"] is None else (row["prefix"].encode(), row["name"].encode())
    assert tar.split_name(row["in"]) == want


def _tarfile_block(name: str, size: int, mtime: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, mtime, 0o644
    info.uname = info.gname = ""
    return info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "surrogateescape")


def _without_dev_and_checksum(block: bytes) -> bytes:
    # GNU tar writes devmajor/devminor as "0000000\0" (as we do); Python 3.11's tarfile writes NULs
    return block[:148] + block[156:329] + block[345:]


@settings(max_examples=300)
@given(names, st.integers(0, tar.MAX_USTAR_SIZE), st.integers(0, 8**11 - 1))
def test_header_matches_tarfile_and_round_trips(name: str, size: int, mtime: int) -> None:
    if tar.split_name(name) is None:
        with pytest.raises(tar.TarError):
            tar.encode_header(name, size, mtime=mtime)
        return
    block = tar.encode_header(name, size, mtime=mtime)
    assert len(block) == tar.BLOCK
    head = tar.decode_header(block)
    assert (head.name, head.size, head.mtime, head.mode) == (name, size, mtime, 0o644)
    assert head.checksum_ok and head.is_ustar and head.is_regular
    assert block[329:345] == b"0000000\x000000000\x00"
    # Python's tarfile reads it back, and writes the same fields (it may split the name elsewhere)
    info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    assert (info.name, info.size, info.mtime) == (name, size, mtime)
    if tar.split_name(name) == (b"", name.encode()):
        assert _without_dev_and_checksum(block) == _without_dev_and_checksum(
            _tarfile_block(name, size, mtime)
        )


def test_checksum_is_the_byte_sum_with_spaces() -> None:
    block = tar.encode_header("index.html", 1062, mtime=1795953600)
    assert int(block[148:154], 8) == sum(block[:148]) + 8 * 32 + sum(block[156:])
    assert block[154:156] == b"\x00 "


@settings(max_examples=200)
@given(st.binary(min_size=512, max_size=512))
def test_decode_never_raises_anything_but_tar_error(block: bytes) -> None:
    with contextlib.suppress(tar.TarError):
        tar.decode_header(block)


def test_non_octal_field_is_a_tar_error() -> None:
    block = bytearray(tar.encode_header("a", 5, mtime=0))
    block[124:136] = b"00000000x05\x00"
    with pytest.raises(tar.TarError, match="size field is not octal"):
        tar.decode_header(bytes(block))


@settings(max_examples=200)
@given(st.lists(segment, min_size=1, max_size=30).map("/".join), st.binary(max_size=700))
def test_member_blocks_any_name_reads_back_with_tarfile(name: str, data: bytes) -> None:
    archive = tar.member_blocks(name, len(data), mtime=7) + data + bytes(tar.padding(len(data)))
    archive += tar.end_of_archive(len(archive))
    assert len(archive) % tar.RECORD == 0
    with tarfile.open(fileobj=io.BytesIO(archive)) as t:
        (info,) = t.getmembers()
        assert info.name == name and info.size == len(data)
        assert t.extractfile(info).read() == data  # type: ignore[union-attr]
    pax = not tar.fits_ustar(name, len(data))
    assert (archive[156:157] == b"x") == pax


def test_pax_size_for_huge_members() -> None:
    blocks = tar.member_blocks("big.bin", tar.MAX_USTAR_SIZE + 1, mtime=0)
    head = tar.decode_header(blocks[:512])
    assert head.typeflag == b"x"
    records = tar.parse_pax(blocks[512 : 512 + head.size])
    assert records == {"size": str(tar.MAX_USTAR_SIZE + 1)}
    assert tar.decode_header(blocks[-512:]).size == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"5 a=b\n", "malformed"),
        (b"5 ab\n", "without '='"),
        (b"x a=b\n", "malformed"),
        (b"99 a=b\n", "malformed"),
    ],
)
def test_parse_pax_rejects_malformed_records(data: bytes, message: str) -> None:
    with pytest.raises(tar.TarError, match=message):
        tar.parse_pax(data)


@pytest.mark.parametrize("length", [0, 1, 511, 512, 9216, 9217, 10240])
def test_end_of_archive_pads_to_a_record(length: int) -> None:
    end = tar.end_of_archive(length)
    assert len(end) >= 1024 and (length + len(end)) % tar.RECORD == 0 and not any(end)


@settings(max_examples=200)
@given(
    st.lists(segment, min_size=1, max_size=30).map("/".join), st.sampled_from([0, 1, tar.MAX_USTAR_SIZE + 1])
)
def test_member_blocks_size(name: str, size: int) -> None:
    assert tar.member_blocks_size(name, size) == len(tar.member_blocks(name, size, mtime=0))


@settings(max_examples=200)
@given(
    names,
    st.integers(0, tar.MAX_USTAR_SIZE),
    st.integers(0, 8**11 - 1),
    st.integers(0, 8**7 - 1),
    st.integers(0, 8**7 - 1),
    st.sampled_from([b"0", b"5", b"x", b"2"]),
    st.text("abcé", max_size=8),
    st.text("lnk/", max_size=30),
)
def test_header_fields_shared_between_members_give_each_its_checksum(
    name: str, size: int, mtime: int, mode: int, uid: int, typeflag: bytes, uname: str, link: str
) -> None:
    """The fields cached per (mode, ids, mtime, type, link, owner names) and each member's names and
    size make the header byte for byte, its checksum the byte sum (tarfile's reading agrees)."""
    if tar.split_name(name) is None:
        return
    for m in (mtime, 0):  # a second mtime with the same other fields: nothing cached leaks across
        block = tar.encode_header(
            name, size, mtime=m, mode=mode, uid=uid, gid=uid, typeflag=typeflag, uname=uname, gname=uname,
            linkname=link,
        )  # fmt: skip
        assert len(block) == tar.BLOCK
        assert int(block[148:154], 8) == sum(block[:148]) + 8 * 32 + sum(block[156:])
        info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        assert (info.name, info.size, info.mtime, info.mode, info.uid, info.linkname) == (
            name, size, m, mode, uid, link,
        )  # fmt: skip
        assert info.type == typeflag and info.uname == uname


@settings(max_examples=200)
@given(names, st.integers(-1, tar.MAX_USTAR_SIZE + 1), st.integers(0, 8**11 - 1))
def test_member_blocks_of_a_ustar_name_is_its_one_header(name: str, size: int, mtime: int) -> None:
    """The short way a member's blocks take (a name and size that fit one header) gives the header
    encode_header writes, of the length member_blocks_size says; the rest go the pax way."""
    try:
        blocks = tar.member_blocks(name, size, mtime=mtime)
    except tar.TarError:
        assert size < 0
        return
    assert len(blocks) == tar.member_blocks_size(name, size)
    if tar.fits_ustar(name, size):
        assert blocks == tar.encode_header(name, size, mtime=mtime)
    else:
        assert len(blocks) > tar.BLOCK
