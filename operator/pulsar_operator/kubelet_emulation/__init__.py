"""A test harness that plays kubelet and kube-controller-manager for the API emulator.

`pulsar_operator.emulation` stores objects but nothing runs them. `Harness`
(harness.py) watches the emulator like a controller would and makes pods real:
each pod's containers run as local processes with the pod's env and args, in
their own mount and UTS namespaces, on their own loopback address, with a name
table that resolves the cluster DNS names (network.py). It implements the
StatefulSet controller with its PersistentVolumeClaims (statefulsets.py), the
garbage collector (gc.py), the kubelet's pod lifecycle and probes (pods.py,
volumes.py, probes.py) and kube-proxy for ClusterIP Services (network.py).

Only imported by tests and bench/, never by the operator: the product cannot
tell it from a cluster.
"""

from pulsar_operator.kubelet_emulation.harness import Harness

__all__ = ["Harness"]
