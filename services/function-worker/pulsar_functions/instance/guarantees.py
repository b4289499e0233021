"""What each processing guarantee asks of the instance: pure decisions, no client.

ATMOST_ONCE acknowledges an input as soon as it arrives; ATLEAST_ONCE and
EFFECTIVELY_ONCE only once the function's output is persisted (or the
function returned nothing); MANUAL and autoAck=false leave acknowledging to
the function. EFFECTIVELY_ONCE adds a Failover subscription (one consumer
at a time per input partition, in order) and an output producer per input
topic whose sequence ids derive from the input message ids: after a crash
the inputs after the last acknowledgement come again, their outputs are sent
again with the same sequence ids, and the broker's deduplication drops the
ones it already has.
"""

from __future__ import annotations

import enum

from pulsar_functions import config

#: Bits of a sequence id given to the entry id and to the batch index.
ENTRY_BITS = 24
BATCH_BITS = 12


class AckPoint(enum.Enum):
    ON_RECEIPT = "on_receipt"
    AFTER_OUTPUT = "after_output"
    BY_FUNCTION = "by_function"


class SubscriptionKind(enum.Enum):
    SHARED = "Shared"
    FAILOVER = "Failover"


def ack_point(function: config.FunctionConfig) -> AckPoint:
    if not function.acks_automatically:
        return AckPoint.BY_FUNCTION
    if function.processing_guarantee is config.ProcessingGuarantee.ATMOST_ONCE:
        return AckPoint.ON_RECEIPT
    return AckPoint.AFTER_OUTPUT


def subscription_kind(function: config.FunctionConfig) -> SubscriptionKind:
    ordered = (function.retain_ordering or function.processing_guarantee
               is config.ProcessingGuarantee.EFFECTIVELY_ONCE)
    return SubscriptionKind.FAILOVER if ordered else SubscriptionKind.SHARED


def deduplicates_output(function: config.FunctionConfig) -> bool:
    return function.processing_guarantee is config.ProcessingGuarantee.EFFECTIVELY_ONCE


def sequence_id(ledger_id: int, entry_id: int, batch_index: int) -> int:
    """A sequence id that grows with the input message id along one topic partition.

    Ledger ids of a topic only grow, entries within a ledger too, so
    (ledger, entry, batch index) packed high to low keeps the order the broker's
    deduplication compares. A message outside a batch has batch index -1. The
    result is one more than the packed id: the client wheel takes a sequence id
    of 0 for "none given" and would number that message itself.
    """
    batch = max(batch_index, 0)
    if not (0 <= entry_id < 1 << ENTRY_BITS and batch < 1 << BATCH_BITS and ledger_id >= 0):
        raise ValueError(f"message id {ledger_id}:{entry_id}:{batch_index} does not fit "
                         "a sequence id")
    return ((ledger_id << (ENTRY_BITS + BATCH_BITS)) | (entry_id << BATCH_BITS) | batch) + 1


def output_producer_name(function: config.FunctionConfig, input_topic: str) -> str:
    """The deduplicated producer of the outputs of one input partition.

    Named by the input partition, not the instance: after a failover the
    instance that takes the partition over continues the same producer's
    sequence.
    """
    return f"{function.fqfn}-{input_topic}"
