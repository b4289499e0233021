"""Topic and namespace names in Pulsar's forms.

Full form: `persistent://tenant/namespace/topic`. Short forms accepted by the
clients: `topic` (tenant public, namespace default) and
`tenant/namespace/topic`. A partition of a partitioned topic is the topic
named `<topic>-partition-<i>`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from pulsar_common import errors

PARTITION_SUFFIX = "-partition-"
_PARTITION_RE = re.compile(r"^(.*)-partition-(\d+)$")
_NAME_RE = re.compile(r"^[-=:.\w]+$")


class InvalidTopicNameError(errors.PulsarError):
    """The text is not a valid topic or namespace name."""


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
        if len(parts) != 2 or not all(_NAME_RE.match(p) for p in parts):
            raise InvalidTopicNameError(f"invalid namespace name {text!r}")
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
                raise InvalidTopicNameError(f"invalid topic domain in {text!r}") from exc
        elif "/" not in text:
            rest = f"public/default/{text}"
        parts = rest.split("/", 2)
        if len(parts) != 3 or not all(parts):
            raise InvalidTopicNameError(f"invalid topic name {text!r}")
        tenant, namespace, local = parts
        for part in (tenant, namespace):
            if not _NAME_RE.match(part):
                raise InvalidTopicNameError(f"invalid topic name {text!r}")
        if "/" in local:
            raise InvalidTopicNameError(f"invalid topic name {text!r}")
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

    @property
    def persistence_name(self) -> str:
        """The managed ledger name: tenant/namespace/domain/topic, as Pulsar lays it out."""
        return f"{self.tenant}/{self.namespace}/{self.domain.value}/{self.local_name}"

    def __str__(self) -> str:
        return f"{self.domain.value}://{self.tenant}/{self.namespace}/{self.local_name}"
