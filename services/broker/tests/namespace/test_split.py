"""Cutting a bundle's range into pieces."""

from __future__ import annotations

import pytest
from pulsar_broker import errors
from pulsar_broker.namespace import split
from pulsar_broker.namespace.bundles import NamespaceBundle
from pulsar_common import naming

NS = naming.NamespaceName("t", "ns")


def test_pieces_cover_the_range_and_only_the_last_is_closed() -> None:
    last = NamespaceBundle(NS, 0x80000000, 0xFFFFFFFF, closed=True)
    pieces = split.pieces(last, [0x90000000, 0xA0000000])
    assert [(p.lower, p.upper, p.closed) for p in pieces] == [
        (0x80000000, 0x90000000, False), (0x90000000, 0xA0000000, False),
        (0xA0000000, 0xFFFFFFFF, True)]


@pytest.mark.parametrize("points", [[], [0x10], [0x50, 0x40], [0x40, 0x40]])
def test_points_that_do_not_divide_the_range_are_refused(points: list[int]) -> None:
    with pytest.raises(errors.PreconditionFailedError):
        split.pieces(NamespaceBundle(NS, 0x10, 0x100), points)
