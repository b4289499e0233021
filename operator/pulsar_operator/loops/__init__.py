"""The operator's controller loops: bookie autorecovery, bookie decommission, etcd membership.

Each loop is a pure planner (`decommission`, `autorecovery`, `etcd_membership`: observed
state and the progress kept in the PulsarCluster's status in, actions and the new progress
out, time as `now_ms`) and `driver`, which observes through the adapters
(`bookie_admin`, `etcd_admin`, the Kubernetes client), carries the actions out in order
and reports each decision as an Event and in the status.
"""
