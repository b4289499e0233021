"""The local storage engine of one bookie."""
