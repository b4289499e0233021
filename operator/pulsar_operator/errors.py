"""Errors of the operator, under one root so handlers can tell them apart.

`retriable` tells the kopf layer whether trying again later can help (a
broker that is not up yet) or not (an invalid spec, which needs a user edit).
"""

from __future__ import annotations


class OperatorError(Exception):
    """Root of every error the operator raises on purpose."""

    retriable: bool = False


class InvalidSpecError(OperatorError):
    """The custom resource's spec breaks a rule; nothing is changed."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class AdminApiError(OperatorError):
    """The Pulsar admin REST API answered with an error or could not be reached."""

    def __init__(self, method: str, path: str, status: int | None, detail: str) -> None:
        where = f"{method} {path}"
        super().__init__(f"{where}: HTTP {status}: {detail}" if status else f"{where}: {detail}")
        self.method = method
        self.path = path
        self.status = status
        # 4xx other than conflicts/timeouts are not cured by waiting.
        self.retriable = status is None or status >= 500 or status in (408, 409, 429)


class KubeApiError(OperatorError):
    """The Kubernetes API answered with an error or could not be reached."""

    def __init__(self, method: str, path: str, status: int | None, detail: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {detail}")
        self.method = method
        self.path = path
        self.status = status
        self.retriable = status is None or status >= 500 or status in (409, 429)


class ClusterNotReadyError(OperatorError):
    """The referenced Pulsar cluster has no admin URL yet."""

    retriable = True


class ClusterGoneError(ClusterNotReadyError):
    """The referenced PulsarCluster does not exist (any more)."""
