"""`pulsar-admin`: Apache Pulsar's admin command line, speaking the admin REST v2 API."""
