"""Authentication as Apache Pulsar configures it: providers that turn a connection's
credentials (a JWT, a user and password, a client certificate) into a role.

Pure decisions over credentials handed in by the front doors (the broker's binary
protocol and HTTP, the proxy); no sockets here. `service.AuthenticationService` is
built from `service.AuthenticationSettings` (Apache's key names live in the services'
config classes) and answers a role or raises `errors.AuthenticationError`.
"""
