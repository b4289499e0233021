"""Non-persistent topics: messages go from producers to the consumers connected now.

Nothing is stored: `topic` hands each message to every subscription at
once, `subscription` gives it to one of its consumers with permits (by
subscription type) or drops it, counting the drop, `registry` keeps the
loaded topics of a broker.
"""
