"""PAR2 2.0 packets (pure): our encoders rebuild par2cmdline's packets byte for byte, and the scanner
finds intact packets and rejects damaged ones."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.errors import FormatError
from archiver.par2 import packets as pk

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "formats" / "vectors" / "fec" / "packets.json").read_text()
)


def _vec(name: str) -> bytes:
    return bytes.fromhex(VECTORS["packets"][name])


def test_vector_packets_rebuilt_from_the_data_alone() -> None:
    data = bytes.fromhex(VECTORS["data_hex"])
    name = VECTORS["file_name"].encode()
    size = VECTORS["slice_size"]
    md5_16k = hashlib.md5(data[:16384]).digest()
    fid = pk.file_id(md5_16k, len(data), name)
    main = pk.Main(size, (fid,))
    set_id = main.set_id
    desc = pk.FileDesc(fid, hashlib.md5(data).digest(), md5_16k, len(data), name)
    entries = b""
    for i in range(math.ceil(len(data) / size)):
        md5, crc = pk.slice_checksum(data[i * size : (i + 1) * size], size)
        entries += md5 + crc.to_bytes(4, "little")
    assert pk.encode_packet(set_id, pk.TYPE_MAIN, pk.encode_main(main)) == _vec("Main")
    assert pk.encode_packet(set_id, pk.TYPE_FILEDESC, pk.encode_filedesc(desc)) == _vec("FileDesc")
    assert pk.encode_packet(set_id, pk.TYPE_IFSC, pk.encode_ifsc(pk.Ifsc(fid, entries))) == _vec("IFSC")


def test_vector_packets_parse_back() -> None:
    main_raw = _vec("Main")
    header = pk.parse_header(main_raw)
    assert header is not None and header.type == pk.TYPE_MAIN and header.length == len(main_raw)
    main = pk.parse_main(main_raw[64:])
    assert main.slice_size == VECTORS["slice_size"]
    assert main.set_id == header.set_id  # the set id is the MD5 of the Main body
    desc = pk.parse_filedesc(_vec("FileDesc")[64:])
    assert desc.name == b"fox.txt" and desc.length == 45 and desc.display_name == "fox.txt"
    ifsc = pk.parse_ifsc(_vec("IFSC")[64:])
    assert len(ifsc) == 3 and ifsc.file_id == desc.file_id == main.recovery_ids[0]
    assert pk.parse_creator(_vec("Creator")[64:]).text == "Created by par2cmdline-turbo version 1.4.0."
    for e in (0, 1):
        raw = _vec(f"RecvSlic {e}")
        assert pk.parse_recovery_exponent(raw[64:]) == e
        assert len(raw) == 64 + 4 + VECTORS["slice_size"]


def test_iter_packets_over_a_stream_with_damage() -> None:
    names = ["Main", "FileDesc", "IFSC", "RecvSlic 0", "RecvSlic 1", "Creator"]
    stream = b"junk" + b"".join(_vec(n) for n in names) + b"tail"
    found = list(pk.iter_packets(stream))
    assert [f.header.type_name for f in found] == [
        "Main",
        "FileDesc",
        "IFSC",
        "RecvSlic",
        "RecvSlic",
        "Creator",
    ]
    assert all(f.valid for f in found) and found[0].offset == 4
    broken = bytearray(stream)
    ifsc_at = found[2].offset
    broken[ifsc_at + 100] ^= 1  # a bit flip in the IFSC body
    broken[found[4].offset + 8] ^= 0x40  # the second recovery packet's length field
    result = [(f.header.type_name, f.valid) for f in pk.iter_packets(bytes(broken))]
    assert ("IFSC", False) in result
    assert [t for t, ok in result if ok] == ["Main", "FileDesc", "RecvSlic", "Creator"]


def test_header_rejects_what_cannot_start_a_packet() -> None:
    good = _vec("Main")
    assert pk.parse_header(good[:63]) is None
    assert pk.parse_header(b"PAR2\x00PKX" + good[8:]) is None
    assert pk.parse_header(good[:8] + (63).to_bytes(8, "little") + good[16:]) is None  # below 64
    assert pk.parse_header(good[:8] + (66).to_bytes(8, "little") + good[16:]) is None  # not /4


@pytest.mark.parametrize(
    ("parser", "body", "message"),
    [
        (pk.parse_main, b"\x00" * 8, "at least 12"),
        (pk.parse_main, (16).to_bytes(8, "little") + (2).to_bytes(4, "little") + b"\x00" * 16, "lists 2"),
        (pk.parse_main, (6).to_bytes(8, "little") + (0).to_bytes(4, "little"), "multiple of 4"),
        (pk.parse_filedesc, b"\x00" * 40, "at least 56"),
        (pk.parse_ifsc, b"\x00" * 30, r"16 \+ 20 per slice"),
        (pk.parse_recovery_exponent, b"\x00", "exponent"),
    ],
)
def test_malformed_bodies_raise_format_error(parser, body: bytes, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FormatError, match=message):
        parser(body)


def test_encode_packet_needs_aligned_bodies() -> None:
    with pytest.raises(ValueError, match="multiple of 4"):
        pk.encode_packet(b"\x00" * 16, pk.TYPE_CREATOR, b"abc")
    assert pk.pad4(b"abcde") == b"abcde\x00\x00\x00" and pk.pad4(b"") == b""


@settings(max_examples=300)
@given(
    bodies=st.lists(st.binary(max_size=64).map(pk.pad4), min_size=1, max_size=6),
    junk=st.binary(max_size=16),
    hit=st.integers(min_value=0),
)
def test_scanner_round_trip_and_single_flip(bodies: list[bytes], junk: bytes, hit: int) -> None:
    """Encoded packets are all found intact; a flip inside one packet's MD5-covered bytes makes that one
    invalid and never invents a valid packet that was not written."""
    set_id = hashlib.md5(b"set").digest()
    raw = [pk.encode_packet(set_id, pk.TYPE_CREATOR, b) for b in bodies]
    stream = junk.replace(b"P", b"Q") + b"".join(raw)
    found = list(pk.iter_packets(stream))
    assert [f.valid for f in found] == [True] * len(raw)
    start = len(stream) - sum(map(len, raw))
    victim = hit % len(raw)
    at = start + sum(map(len, raw[:victim])) + 32 + (hit // len(raw)) % (len(raw[victim]) - 32)
    broken = bytearray(stream)
    broken[at] ^= 0x01
    valid = [
        bytes(broken[f.offset : f.offset + f.header.length])
        for f in pk.iter_packets(bytes(broken))
        if f.valid
    ]
    assert sorted(valid) == sorted(raw[:victim] + raw[victim + 1 :])
