"""`pulsar-client`: produce and consume from the command line with the official client library."""
