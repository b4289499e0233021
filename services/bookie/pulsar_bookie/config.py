"""A bookie's settings, read from a bookkeeper.conf-style file with BookKeeper's key names.

Only the settings this bookie implements are declared; `pulsar_common.config.load`
ignores the many other keys an Apache bookkeeper.conf carries. Times keep
BookKeeper's units (the unit is in the key name or in the doc).
"""

from __future__ import annotations

import dataclasses

from pulsar_common import config, errors

MB = 1024 * 1024
#: Offsets inside an entry log are stored in 32 bits.
ENTRY_LOG_SIZE_LIMIT_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class BookieConfig:
    # Identity and network (the server part uses these).
    bookiePort: int = config.setting("bookiePort", 3181, "Port the bookie serves on")
    advertisedAddress: str = config.setting(
        "advertisedAddress", "", "Host name the bookie registers"
    )
    bookieId: str = config.setting("bookieId", "", "Explicit bookie id (host:port when empty)")

    # Directories.
    journalDirectory: str = config.setting(
        "journalDirectory",
        "data/bookkeeper/journal",
        "Journal directory (when journalDirectories is empty)",
    )
    journalDirectories: tuple[str, ...] = config.setting(
        "journalDirectories",
        (),
        "Comma-separated journal directories; ledgers are spread over them",
    )
    ledgerDirectories: tuple[str, ...] = config.setting(
        "ledgerDirectories",
        ("data/bookkeeper/ledgers",),
        "Comma-separated entry log and index directories",
    )

    # Journal.
    journalSyncData: bool = config.setting(
        "journalSyncData", True, "fdatasync the journal before acknowledging an add"
    )
    journalMaxGroupWaitMSec: int = config.setting(
        "journalMaxGroupWaitMSec", 1,
        "Longest time an add waits to be grouped with others (see journalAdaptiveGroupWrites)"
    )
    journalBufferedWritesThreshold: int = config.setting(
        "journalBufferedWritesThreshold", 512 * 1024, "Bytes after which a journal batch is written"
    )
    journalBufferedEntriesThreshold: int = config.setting(
        "journalBufferedEntriesThreshold", 10000, "Records after which a journal batch is written"
    )
    journalAdaptiveGroupWrites: bool = config.setting(
        "journalAdaptiveGroupWrites", True,
        "Apply journalMaxGroupWaitMSec only while adds pile up (a lone add is synced at once); "
        "false: every batch waits for company up to journalMaxGroupWaitMSec"
    )
    journalFlushWhenQueueEmpty: bool = config.setting(
        "journalFlushWhenQueueEmpty", False, "Write a batch as soon as the journal queue is empty"
    )
    journalQueueSize: int = config.setting(
        "journalQueueSize", 10000, "Records waiting for the journal before adds wait"
    )
    journalMaxSizeMB: int = config.setting(
        "journalMaxSizeMB", 2048, "Size after which a new journal file is started"
    )
    journalDirectWrites: bool = config.setting(
        "journalDirectWrites", True,
        "With journalSyncData on, write journal files with O_DIRECT from an aligned buffer "
        "(padded to 4096 bytes, the last partial block written again with the next batch), "
        "so that journal writes neither copy into nor grow the page cache; a filesystem that "
        "refuses O_DIRECT (tmpfs on older kernels) gets ordinary writes. false: ordinary "
        "(page cache) writes"
    )
    journalResidentEntryMinBytes: int = config.setting(
        "journalResidentEntryMinBytes", -1,
        "Entries at least this large (bytes) are not copied to an entry log at a flush: the "
        "index points at their journal record, and journal files holding such entries are "
        "kept until garbage collection reclaims them (their ledgers deleted, or the entries "
        "moved to an entry log by compaction); 0: every entry is copied (BookKeeper's way); "
        "-1: 32768 when every journal directory is on the ledger directories' filesystem "
        "(one disk takes both writes), else 0 (a separate journal disk is sized for the "
        "journal only)"
    )

    # Entry logs, caches and the index (DbLedgerStorage).
    entryLogSizeLimit: int = config.setting(
        "entryLogSizeLimit", 1024 * MB, "Size after which a new entry log file is started (bytes)"
    )
    dbStorage_writeCacheMaxSizeMb: int = config.setting(
        "dbStorage_writeCacheMaxSizeMb",
        64,
        "Write cache size; half is filled while the other half flushes",
    )
    dbStorage_readAheadCacheMaxSizeMb: int = config.setting(
        "dbStorage_readAheadCacheMaxSizeMb", 32, "Read cache size"
    )
    dbStorage_readAheadCacheBatchSize: int = config.setting(
        "dbStorage_readAheadCacheBatchSize",
        100,
        "Entries read ahead after a read from an entry log",
    )
    dbStorage_maxThrottleTimeMs: int = config.setting(
        "dbStorage_maxThrottleTimeMs", 10000, "Longest wait of an add for write cache space"
    )
    numReadWorkerThreads: int = config.setting(
        "numReadWorkerThreads", 2, "Threads reading entry logs"
    )
    maxPendingReadRequestsPerThread: int = config.setting(
        "maxPendingReadRequestsPerThread",
        10000,
        "Entry log reads waiting per read thread before reads are refused (TooManyRequests)",
    )
    flushInterval: int = config.setting(
        "flushInterval", 60000, "Milliseconds between flushes of the write cache (checkpoints)"
    )

    # Garbage collection and compaction.
    gcWaitTime: int = config.setting(
        "gcWaitTime", 900000, "Milliseconds between garbage collections"
    )
    minorCompactionThreshold: float = config.setting(
        "minorCompactionThreshold",
        0.2,
        "Entry logs with a live ratio below this are compacted (minor)",
    )
    minorCompactionInterval: int = config.setting(
        "minorCompactionInterval", 3600, "Seconds between minor compactions (0 disables)"
    )
    majorCompactionThreshold: float = config.setting(
        "majorCompactionThreshold",
        0.5,
        "Entry logs with a live ratio below this are compacted (major)",
    )
    majorCompactionInterval: int = config.setting(
        "majorCompactionInterval", 86400, "Seconds between major compactions (0 disables)"
    )

    # Disk checks (used by the server part).
    diskUsageThreshold: float = config.setting(
        "diskUsageThreshold", 0.95, "Disk usage above which a ledger directory is full"
    )
    diskUsageWarnThreshold: float = config.setting(
        "diskUsageWarnThreshold", 0.90, "Disk usage above which a warning is logged"
    )
    diskUsageLwmThreshold: float = config.setting(
        "diskUsageLwmThreshold",
        0.90,
        "Disk usage below which a read-only bookie becomes writable again",
    )
    diskCheckInterval: int = config.setting(
        "diskCheckInterval", 10000, "Milliseconds between disk usage checks"
    )

    # The bookie service (pulsar_bookie.service): network, metadata, HTTP.
    metadataServiceUri: str = config.setting(
        "metadataServiceUri",
        "",
        "Metadata store the bookie registers in (etcd:http://host:2379); empty: unregistered",
    )
    zkTimeout: int = config.setting(
        "zkTimeout",
        10000,
        "Metadata session timeout in ms: a dead bookie's registration vanishes after it",
    )
    bookieBindAddress: str = config.setting(
        "bookieBindAddress", "0.0.0.0", "Address the bookie port listens on"
    )
    httpServerEnabled: bool = config.setting(
        "httpServerEnabled", True, "Serve the HTTP admin and metrics endpoint"
    )
    httpServerHost: str = config.setting(
        "httpServerHost", "0.0.0.0", "Address the HTTP endpoint listens on"
    )
    httpServerPort: int = config.setting(
        "httpServerPort", 8000, "Port of the HTTP admin and metrics endpoint"
    )
    rack: str = config.setting(
        "rack", "", "Rack or zone label of this bookie, used to spread ensembles"
    )
    maxPendingAddRequestsPerThread: int = config.setting(
        "maxPendingAddRequestsPerThread",
        10000,
        "Adds in progress before further adds are refused (TooManyRequests)",
    )
    maxLongPollLacRequests: int = config.setting(
        "maxLongPollLacRequests",
        10000,
        "Long-poll LAC requests waiting before further ones are refused (TooManyRequests)",
    )
    nettyMaxFrameSizeBytes: int = config.setting(
        "nettyMaxFrameSizeBytes", 5 * MB + 16 * 1024, "Largest request frame the bookie accepts"
    )
    # TLS of the bookie protocol (BookKeeper's keys; PEM files only). With a provider class
    # set, the bookie port speaks TLS from the first byte (BookKeeper starts TLS in-band).
    tlsProviderFactoryClass: str = config.setting(
        "tlsProviderFactoryClass", "",
        "org.apache.bookkeeper.tls.TLSContextFactory turns TLS on for the bookie port")
    tlsCertificatePath: str = config.setting("tlsCertificatePath", "", "PEM certificate")
    tlsKeyStore: str = config.setting("tlsKeyStore", "", "PEM private key (tlsKeyStoreType=PEM)")
    tlsKeyStoreType: str = config.setting("tlsKeyStoreType", "PEM", "Only PEM is read")
    tlsTrustStore: str = config.setting(
        "tlsTrustStore", "", "PEM CA certificates client certificates are checked against")
    tlsTrustStoreType: str = config.setting("tlsTrustStoreType", "PEM", "Only PEM is read")
    tlsClientAuthentication: bool = config.setting(
        "tlsClientAuthentication", False, "Require client certificates signed by tlsTrustStore")
    readOnlyModeEnabled: bool = config.setting(
        "readOnlyModeEnabled",
        True,
        "Go read-only when the disk is full (otherwise shut down)",
    )
    forceReadOnlyBookie: bool = config.setting(
        "forceReadOnlyBookie", False, "Start and stay read-only (serve reads only)"
    )
    # Autorecovery (pulsar_bookie.autorecovery): auditor and replication worker.
    autoRecoveryDaemonEnabled: bool = config.setting(
        "autoRecoveryDaemonEnabled",
        False,
        "Run an autorecovery daemon (auditor candidate and replication worker) in this bookie",
    )
    lostBookieRecoveryDelay: int = config.setting(
        "lostBookieRecoveryDelay",
        0,
        "Seconds a bookie may be gone before its ledgers are marked under-replicated "
        "(initial cluster-wide value; the admin API changes it at run time)",
    )
    auditorPeriodicCheckInterval: int = config.setting(
        "auditorPeriodicCheckInterval",
        604800,
        "Seconds between checks that each fragment's bookies hold its entries (0 disables)",
    )
    auditorPeriodicBookieCheckInterval: int = config.setting(
        "auditorPeriodicBookieCheckInterval",
        86400,
        "Seconds between checks for fragments on bookies no longer registered (0 disables)",
    )
    openLedgerRereplicationGracePeriod: int = config.setting(
        "openLedgerRereplicationGracePeriod",
        30000,
        "Milliseconds a worker leaves the last fragment of an open ledger to its writer "
        "before fencing and closing the ledger to re-replicate it",
    )
    rereplicationEntryBatchSize: int = config.setting(
        "rereplicationEntryBatchSize",
        64,
        "Entries a replication worker copies at once (reads and adds in flight)",
    )

    @property
    def journal_dirs(self) -> tuple[str, ...]:
        return self.journalDirectories or (self.journalDirectory,)

    @property
    def write_cache_max_bytes(self) -> int:
        return self.dbStorage_writeCacheMaxSizeMb * MB

    @property
    def read_cache_max_bytes(self) -> int:
        return self.dbStorage_readAheadCacheMaxSizeMb * MB

    def validate(self) -> None:
        """Refuse settings that would make a limit meaningless (checked at start-up)."""
        problems = []
        if not self.ledgerDirectories:
            problems.append("ledgerDirectories is empty")
        dirs = list(self.journal_dirs) + list(self.ledgerDirectories)
        if len(set(dirs)) != len(dirs):
            problems.append("a directory is listed twice")
        for key in (
            "journalBufferedWritesThreshold",
            "journalBufferedEntriesThreshold",
            "journalQueueSize",
            "journalMaxSizeMB",
            "dbStorage_writeCacheMaxSizeMb",
            "dbStorage_readAheadCacheBatchSize",
            "numReadWorkerThreads",
            "maxPendingReadRequestsPerThread",
            "flushInterval",
            "gcWaitTime",
            "rereplicationEntryBatchSize",
        ):
            if getattr(self, key) <= 0:
                problems.append(f"{key} must be positive")
        if self.journalResidentEntryMinBytes < -1:
            problems.append("journalResidentEntryMinBytes must be >= -1")
        if self.journalMaxGroupWaitMSec < 0 or self.dbStorage_readAheadCacheMaxSizeMb < 0:
            problems.append(
                "journalMaxGroupWaitMSec and dbStorage_readAheadCacheMaxSizeMb must be >= 0"
            )
        if min(self.lostBookieRecoveryDelay, self.auditorPeriodicCheckInterval,
               self.auditorPeriodicBookieCheckInterval,
               self.openLedgerRereplicationGracePeriod) < 0:
            problems.append("autorecovery delays and intervals must be >= 0")
        if not 64 * 1024 <= self.entryLogSizeLimit <= ENTRY_LOG_SIZE_LIMIT_MAX:
            problems.append("entryLogSizeLimit must be between 64 KiB and 2 GiB")
        if problems:
            raise errors.ConfigError("; ".join(problems))
