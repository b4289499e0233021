"""The Pulsar binary protocol: protobuf messages, frame codec and payload helpers.

Pure code (no asyncio, no sockets) shared by the broker, the proxy, tests and
Spark. Modules:

- ``pulsar_api_pb2``: messages generated from ``pulsar_api.proto``.
- ``frame``: encoding frames and the incremental ``FrameDecoder``.
- ``entry``: stored entries (metadataSize | metadata | payload) and MESSAGE frames.
- ``batch`` / ``compression``: reading single messages out of a batch payload.
- ``commands``: constructors for the commands a broker sends.
- ``codes``: ServerError and ProtocolVersion helpers.
- ``errors``: what goes wrong while decoding.
"""
