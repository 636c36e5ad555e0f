//! [`ClientInfo`]: who a lock client is, as it describes itself to
//! operators (host, process, service), so a holder, a waiter or a permit
//! can be named by more than its client id.
//!
//! The engine only carries the type: where a client's record is kept and
//! how it is read back belong to the store (for Redis: the `lock-script`
//! crate's `clients` module). A holder written by a client that keeps no
//! record (a Java client, another library) simply has none.

/// What a client says about itself: read back from its record and joined
/// to the holders, waiters and permits it owns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientInfo {
    /// The host the client runs on, as the host names itself.
    pub host: String,
    /// Its process id on that host.
    pub pid: u32,
    /// The service name it was configured with
    /// ([`crate::ClientConfig::service_name`]), if any.
    pub service: Option<String>,
    /// The file name of the process's executable, when it could be read.
    pub executable: Option<String>,
    /// When the client was created, in milliseconds since the Unix epoch
    /// (by its own clock).
    pub started_ms: u64,
    /// The version of the library that wrote the record.
    pub version: String,
}

impl ClientInfo {
    /// A client on `host` with process id `pid`, created at `started_ms`
    /// (epoch milliseconds), written by library `version`; no service and
    /// no executable name (see the `with_` setters).
    pub fn new(
        host: impl Into<String>,
        pid: u32,
        started_ms: u64,
        version: impl Into<String>,
    ) -> Self {
        Self {
            host: host.into(),
            pid,
            service: None,
            executable: None,
            started_ms,
            version: version.into(),
        }
    }

    /// With this service name.
    pub fn with_service(mut self, service: Option<String>) -> Self {
        self.service = service;
        self
    }

    /// With this executable name.
    pub fn with_executable(mut self, executable: Option<String>) -> Self {
        self.executable = executable;
        self
    }
}
