"""The `pulsar` command and its subcommands."""
