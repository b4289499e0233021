"""Errors of the schema registry, with the HTTP status Apache's admin API answers."""

from __future__ import annotations

from pulsar_broker import errors


class SchemaError(errors.BrokerError):
    pass


class IncompatibleSchemaError(SchemaError):
    """The schema may not follow the topic's existing ones (protocol IncompatibleSchema)."""

    http_status = 409


class InvalidSchemaDefinitionError(SchemaError):
    """A definition that cannot be parsed (Apache answers 422)."""

    http_status = 422


class SchemaNotFoundError(SchemaError, errors.NotFoundError):
    http_status = 404


class SchemaConflictError(SchemaError):
    """The topic's schema history changed concurrently too many times in a row."""

    http_status = 409
