"""The command-line clients, apart from the services as in Apache's pulsar-client-tools.

`admin` is `pulsar-admin` (the admin REST v2 API), `client` is
`pulsar-client` and `perf` is `pulsar-perf` (both drive the official client
wheel). They reach brokers over the wire only, so they import no broker,
bookie or proxy module: services/broker/tests/test_layer_contracts.py holds
them to it.
"""
