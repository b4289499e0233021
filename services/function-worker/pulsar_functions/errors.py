"""Errors of the function runtime and the functions worker, under one root.

`retriable` tells a caller whether the same call may succeed later (a broker
not reachable yet) or never will (a bad function config).
"""

from __future__ import annotations


class FunctionsError(Exception):
    """Root of every error this package raises on purpose."""

    retriable = False


class InvalidFunctionConfigError(FunctionsError):
    """A function config (function.json, or the worker's functionConfig part) is unusable."""


class FunctionCodeError(FunctionsError):
    """The user's code cannot be loaded or its className does not name a function."""


class StateStoreError(FunctionsError):
    """The function's state topic cannot be read or written."""

    retriable = True


class FunctionNotFoundError(FunctionsError):
    """No function of that name is registered."""


class FunctionAlreadyExistsError(FunctionsError):
    """create() of a function that is already registered."""


class InstanceNotFoundError(FunctionsError):
    """An instance id outside 0..parallelism-1."""
