"""The Kubernetes operator (kopf): handlers over pure reconcilers and controller loops."""
