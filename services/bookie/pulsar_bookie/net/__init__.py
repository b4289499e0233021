"""The bookie's network transport: the frame codec, the asyncio server and the client pool."""
