"""Worker settings, by the keys of Apache's functions_worker.yml (as `key=value` lines)."""

from __future__ import annotations

import dataclasses

from pulsar_common.config import setting


@dataclasses.dataclass(frozen=True)
class WorkerConfig:
    worker_id: str = setting("workerId", "", "This worker's id (default host:port)")
    worker_hostname: str = setting("workerHostname", "127.0.0.1",
                                   "Host name other workers and instances reach this one by")
    worker_port: int = setting("workerPort", 6750, "HTTP port of the REST API")
    bind_address: str = setting("bindAddress", "0.0.0.0", "Address the REST API binds")
    metadata_store_url: str = setting(
        "configurationMetadataStoreUrl", "", "Metadata store of function records (etcd:...)")
    pulsar_service_url: str = setting("pulsarServiceUrl", "pulsar://localhost:6650",
                                      "Broker service URL the instances use")
    pulsar_web_service_url: str = setting("pulsarWebServiceUrl", "http://localhost:8080",
                                          "Broker admin URL")
    cluster: str = setting("pulsarFunctionsCluster", "standalone", "Cluster name")
    data_dir: str = setting("downloadDirectory", "data/functions",
                            "Where instance configs and code are written")
    session_timeout_ms: int = setting("metadataStoreSessionTimeoutMillis", 30000,
                                      "Session of this worker's membership and leadership")
    package_max_bytes: int = setting("maxPackageSizeBytes", 1 << 20,
                                     "Largest function code accepted (kept in the metadata store)")

    @property
    def effective_worker_id(self) -> str:
        return self.worker_id or f"{self.worker_hostname}:{self.worker_port}"
