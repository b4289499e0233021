"""Example functions shipped with pulsar-py, so a Function can run code the image already has.

`className: pulsar_functions.examples.exclamation_function.ExclamationFunction`
needs no `py` or `pyLocation`: the module is installed with the package. The
image also links exclamation_function.py to /pulsar/examples/python-examples/,
where Apache's image keeps its Python examples (function-mesh samples name
that path).
"""
