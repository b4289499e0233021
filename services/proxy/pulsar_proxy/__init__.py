"""The proxy in front of brokers (binary protocol and HTTP)."""
