"""What differs between a desired object and the live one, as a JSON merge patch.

The API server adds defaults to what we send (ports' protocols, probe
thresholds, metadata), so the live object is a superset of ours. A field is
in line when our value is contained in the live one; only fields that are
not become part of the patch, and a reconcile of an unchanged cluster sends
nothing. Fields Kubernetes forbids changing are left out of patches.
"""

from __future__ import annotations

from typing import Any

#: Paths (kind -> tuple of key paths) the API server rejects changes to.
IMMUTABLE: dict[str, tuple[tuple[str, ...], ...]] = {
    "StatefulSet": (("spec", "selector"), ("spec", "serviceName"), ("spec", "volumeClaimTemplates"),
                    ("spec", "podManagementPolicy")),
    "Service": (("spec", "clusterIP"),),
}
#: Maps we own completely: keys missing from ours are removed from the live object.
EXACT: dict[str, tuple[tuple[str, ...], ...]] = {
    "ConfigMap": (("data",),),
}


def contains(have: Any, want: Any) -> bool:
    """True when `want` is contained in `have` (dicts by key, lists element-wise)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(contains(have.get(k), v) for k, v in want.items())
    if isinstance(want, list):
        return (isinstance(have, list) and len(have) == len(want)
                and all(contains(h, w) for h, w in zip(have, want)))
    return bool(have == want)


def _diff(want: dict[str, Any], have: dict[str, Any], path: tuple[str, ...], kind: str) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    if path in EXACT.get(kind, ()):
        patch.update({key: None for key in have if key not in want})
    for key, value in want.items():
        here = path + (key,)
        if here in IMMUTABLE.get(kind, ()):
            continue
        current = have.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            sub = _diff(value, current, here, kind)
            if sub:
                patch[key] = sub
        elif not contains(current, value):
            patch[key] = value
    return patch


def merge_patch(desired: dict[str, Any], live: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch bringing `live` in line with `desired`, or None when nothing differs."""
    kind = str(desired.get("kind", ""))
    want = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind", "status")}
    meta = want.pop("metadata", {})
    patch = _diff(want, live, (), kind)
    meta_want = {k: meta[k] for k in ("labels", "annotations", "ownerReferences") if k in meta}
    meta_patch = _diff(meta_want, live.get("metadata") or {}, ("metadata",), kind)
    if meta_patch:
        patch["metadata"] = meta_patch
    return patch or None
