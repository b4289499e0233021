"""Identifiers shared by the bookie engine and the ledger client."""

from __future__ import annotations

from typing import NewType

LedgerId = NewType("LedgerId", int)
EntryId = NewType("EntryId", int)
#: "host:port" of a bookie, as BookKeeper names them.
BookieId = NewType("BookieId", str)

#: Entry id meaning "nothing yet" (an empty ledger's LAC or last entry id).
INVALID_ENTRY_ID = EntryId(-1)
