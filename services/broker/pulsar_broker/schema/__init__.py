"""The topic schema registry: versions per topic, compatibility checks, storage."""
