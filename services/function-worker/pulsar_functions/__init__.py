"""The function worker: runs Python functions over topics."""
