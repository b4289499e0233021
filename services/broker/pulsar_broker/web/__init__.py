"""The broker's HTTP side: admin REST v2, HTTP lookup, health and Prometheus metrics."""
