"""Topic and namespace names in Pulsar's forms.

Full form: `persistent://tenant/namespace/topic`. Short forms accepted by the
clients: `topic` (tenant public, namespace default) and
`tenant/namespace/topic`. A partition of a partitioned topic is the topic
named `<topic>-partition-<i>`.
"""

from __future__ import annotations

import enum
import functools
import re
import sys
from dataclasses import dataclass

from pulsar_common import errors

#: The namespace of the brokers' own topics (heartbeats; Apache's system namespace).
SYSTEM_NAMESPACE = "pulsar/system"
PARTITION_SUFFIX = "-partition-"
_PARTITION_RE = re.compile(r"^(.*)-partition-(\d+)$")
_NAME_RE = re.compile(r"^[-=:.\w]+$")
#: Longest tenant, namespace or topic (local) name. Apache sets no limit; names become keys
#: in the metadata store and the names of managed ledgers, so a megabyte name must not be one.
NAME_LENGTH_MAX = 1024
#: Partition indexes are Java ints in the protocol (MessageIdData.partition).
PARTITION_INDEX_MAX = 2**31 - 1
#: Path steps that would name another node in the metadata store.
_RELATIVE_STEPS = frozenset({".", ".."})


def _valid_part(part: str) -> bool:
    """A tenant or namespace name: Apache's characters, not a relative path step, not huge."""
    return (len(part) <= NAME_LENGTH_MAX and part not in _RELATIVE_STEPS
            and _NAME_RE.match(part) is not None)


def valid_name(part: str) -> bool:
    """Whether part may be a tenant, namespace or cluster name."""
    return _valid_part(part)


class InvalidTopicNameError(errors.PulsarError):
    """The text is not a valid topic or namespace name."""


def _shown(text: str) -> str:
    """text for an error message, cut so that a huge name does not make a huge reply."""
    return repr(text) if len(text) <= 200 else f"{text[:200]!r}... ({len(text)} characters)"


def _valid_local(local: str) -> bool:
    """A topic's local name: any characters but '/', not a relative path step, not huge,
    and a -partition-N suffix whose N is a partition index the protocol can carry."""
    if "/" in local or local in _RELATIVE_STEPS or len(local) > NAME_LENGTH_MAX:
        return False
    match = _PARTITION_RE.match(local)
    return match is None or int(match.group(2)) <= PARTITION_INDEX_MAX


class TopicDomain(enum.Enum):
    PERSISTENT = "persistent"
    NON_PERSISTENT = "non-persistent"


@dataclass(frozen=True)
class NamespaceName:
    tenant: str
    namespace: str

    @classmethod
    def parse(cls, text: str) -> NamespaceName:
        parts = text.split("/")
        if len(parts) != 2 or not all(_valid_part(p) for p in parts):
            raise InvalidTopicNameError(f"invalid namespace name {_shown(text)}")
        return cls(parts[0], parts[1])

    def __str__(self) -> str:
        return f"{self.tenant}/{self.namespace}"


@dataclass(frozen=True)
class TopicName:
    domain: TopicDomain
    tenant: str
    namespace: str
    #: Local name, including any -partition-N suffix.
    local_name: str

    @classmethod
    def parse(cls, text: str) -> TopicName:
        domain = TopicDomain.PERSISTENT
        rest = text
        if "://" in text:
            scheme, _, rest = text.partition("://")
            try:
                domain = TopicDomain(scheme)
            except ValueError as exc:
                raise InvalidTopicNameError(f"invalid topic domain in {_shown(text)}") from exc
        elif "/" not in text:
            rest = f"public/default/{text}"
        parts = rest.split("/", 2)
        if len(parts) != 3 or not all(parts):
            raise InvalidTopicNameError(f"invalid topic name {_shown(text)}")
        tenant, namespace, local = parts
        if not (_valid_part(tenant) and _valid_part(namespace)) or not _valid_local(local):
            raise InvalidTopicNameError(f"invalid topic name {_shown(text)}")
        return cls(domain, tenant, namespace, local)

    @classmethod
    def of(cls, domain: str, tenant: str, namespace: str, local_name: str) -> TopicName:
        return cls.parse(f"{domain}://{tenant}/{namespace}/{local_name}")

    @property
    def namespace_name(self) -> NamespaceName:
        return NamespaceName(self.tenant, self.namespace)

    @property
    def persistent(self) -> bool:
        return self.domain is TopicDomain.PERSISTENT

    @property
    def partition_index(self) -> int:
        """-1 for a topic that is not a partition."""
        match = _PARTITION_RE.match(self.local_name)
        return int(match.group(2)) if match else -1

    @property
    def partitioned_topic_name(self) -> TopicName:
        """The parent topic of a partition (itself for any other topic)."""
        match = _PARTITION_RE.match(self.local_name)
        if not match:
            return self
        return TopicName(self.domain, self.tenant, self.namespace, match.group(1))

    def partition(self, index: int) -> TopicName:
        return TopicName(
            self.domain, self.tenant, self.namespace, f"{self.local_name}{PARTITION_SUFFIX}{index}"
        )

    @property
    def encoded_local_name(self) -> str:
        return self.local_name

    @functools.cached_property
    def persistence_name(self) -> str:
        """The managed ledger name: tenant/namespace/domain/topic, as Pulsar lays it out.
        Built once per name (the name is frozen) and interned: the maps keyed by it then
        share one string, whichever parse of the topic's name they got it from (issue 16)."""
        return sys.intern(f"{self.tenant}/{self.namespace}/{self.domain.value}/{self.local_name}")

    @functools.cached_property
    def _text(self) -> str:
        # Interned for the same reason as persistence_name: tracemalloc found ~7 copies of
        # each topic's full name kept per topic, one per str() whose result a map keeps.
        return sys.intern(f"{self.domain.value}://{self.tenant}/{self.namespace}/{self.local_name}")

    def __str__(self) -> str:
        return self._text
