"""The broker service: the topics this broker serves and the rules for creating them."""
