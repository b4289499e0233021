"""The frame codec: golden bytes field by field, stream cutting, and refusal of malformed frames."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulsar_bookie import errors
from pulsar_bookie.net import errors as net_errors
from pulsar_bookie.net import wire


def test_add_request_golden_bytes() -> None:
    frame = wire.encode_request(
        wire.Request(wire.Op.ADD, wire.FLAG_RECOVERY, 7, 42, 3, 2, b"key", b"payload")
    )
    expected = (
        struct.pack(">I", 38 + 3 + 7)  # size: header after this field + key + payload
        + bytes.fromhex("b0c1")  # magic
        + bytes([1, 1])  # op ADD, flags RECOVERY
        + struct.pack(">H", 3)  # master key length
        + struct.pack(">Q", 7)  # request id
        + struct.pack(">q", 42)  # ledger
        + struct.pack(">q", 3)  # entry
        + struct.pack(">q", 2)  # writer's LAC
        + b"key"
        + b"payload"
    )
    assert frame == expected


def test_error_response_golden_bytes() -> None:
    request = wire.Request(wire.Op.READ, 0, 9, 5, 6, -1, b"", b"")
    frame = wire.encode_error(request, wire.Status.NO_SUCH_ENTRY, "gone")
    assert frame == (
        struct.pack(">I", 38 + 4)
        + bytes.fromhex("b0c1")
        + bytes([2, 2])  # op READ, status NO_SUCH_ENTRY
        + struct.pack(">H", 0)
        + struct.pack(">Qqqq", 9, 5, 6, -1)
        + b"gone"
    )


requests = st.builds(
    wire.Request,
    op=st.just(wire.Op.ADD),
    flags=st.sampled_from([0, wire.FLAG_RECOVERY]),
    request_id=st.integers(0, 2**64 - 1),
    ledger_id=st.integers(0, 2**63 - 1),
    entry_id=st.integers(-1, 2**63 - 1),
    arg=st.integers(-1, 2**63 - 1),
    master_key=st.binary(max_size=40),
    payload=st.binary(max_size=3000),
)


@given(st.lists(requests, max_size=8), st.integers(1, 200))
def test_requests_survive_any_chunking(batch: list[wire.Request], chunk: int) -> None:
    stream = b"".join(wire.encode_request(r) for r in batch)
    decoder = wire.RequestDecoder()
    decoded: list[wire.Request] = []
    for start in range(0, len(stream), chunk):
        decoded.extend(decoder.feed(stream[start:start + chunk]))
    assert decoded == batch
    assert decoder.buffered_bytes == 0


@given(st.binary(max_size=5000), st.sampled_from(list(wire.Status)))
def test_responses_round_trip(body: bytes, status: wire.Status) -> None:
    response = wire.Response(wire.Op.READ, status, 1, 2, 3, 4, body)
    assert wire.ResponseDecoder().feed(wire.encode_response(response)) == [response]


def _header(**fields: int) -> bytes:
    values = {"size": 38, "magic": wire.MAGIC, "op": 2, "flags": 0, "key": 0}
    values.update(fields)
    return wire.HEADER.pack(
        values["size"], values["magic"], values["op"], values["flags"], values["key"], 1, 1, 1, 1
    )


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(_header(magic=0x1234), id="bad magic"),
        pytest.param(_header(op=99), id="unknown op"),
        pytest.param(_header(flags=0x80), id="unknown flag"),
        pytest.param(_header(key=5), id="master key past the frame"),
        pytest.param(_header(size=10), id="size below a header"),
        pytest.param(_header(size=wire.MAX_FRAME_BYTES_DEFAULT), id="size above the limit"),
        pytest.param(_header(size=40) + b"xx", id="body on a read"),
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(40), id="http request"),
    ],
)
def test_malformed_requests_are_refused(frame: bytes) -> None:
    with pytest.raises(net_errors.MalformedFrameError):
        wire.RequestDecoder().feed(frame)


def test_oversized_frame_is_refused_before_its_body_arrives() -> None:
    decoder = wire.RequestDecoder(max_frame_bytes=1024)
    with pytest.raises(net_errors.MalformedFrameError):
        decoder.feed(struct.pack(">I", 2048))


@pytest.mark.parametrize(
    ("exc", "status", "raised"),
    [
        (errors.NoSuchLedgerError("x"), wire.Status.NO_SUCH_LEDGER, errors.NoSuchLedgerError),
        (errors.NoSuchEntryError("x"), wire.Status.NO_SUCH_ENTRY, errors.NoSuchEntryError),
        (errors.LedgerFencedError("x"), wire.Status.FENCED, errors.LedgerFencedError),
        (errors.UnauthorizedAccessError("x"), wire.Status.UNAUTHORIZED,
         errors.UnauthorizedAccessError),
        (errors.TooManyRequestsError("x"), wire.Status.TOO_MANY_REQUESTS,
         errors.TooManyRequestsError),
        (errors.StorageClosedError("x"), wire.Status.UNAVAILABLE, errors.BookieUnavailableError),
        (net_errors.BookieReadOnlyError("x"), wire.Status.READ_ONLY,
         net_errors.BookieReadOnlyError),
        (RuntimeError("x"), wire.Status.SERVER_ERROR, net_errors.BookieServerError),
    ],
)
def test_storage_errors_map_to_statuses_and_back(
    exc: BaseException, status: wire.Status, raised: type[Exception]
) -> None:
    assert wire.status_for(exc) is status
    assert isinstance(wire.error_for(status, "m"), raised)


def test_read_only_is_a_kind_of_unavailable() -> None:
    assert isinstance(wire.error_for(wire.Status.READ_ONLY, "m"), errors.BookieUnavailableError)


@given(st.binary(max_size=400), st.integers(1, 64))
def test_arbitrary_bytes_decode_or_raise_malformed_never_anything_else(
    data: bytes, chunk: int
) -> None:
    for decoder in (wire.RequestDecoder(max_frame_bytes=4096),
                    wire.ResponseDecoder(max_frame_bytes=4096)):
        try:
            for start in range(0, len(data), chunk):
                decoder.feed(data[start:start + chunk])
        except net_errors.MalformedFrameError:
            pass


@given(requests, st.binary(min_size=1, max_size=60))
def test_a_valid_frame_followed_by_garbage_yields_the_frame_first(
    request: wire.Request, garbage: bytes
) -> None:
    decoder = wire.RequestDecoder()
    assert decoder.feed(wire.encode_request(request)) == [request]
    try:
        assert all(isinstance(r, wire.Request) for r in decoder.feed(garbage))
    except net_errors.MalformedFrameError:
        pass
