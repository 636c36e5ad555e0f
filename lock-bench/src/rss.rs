//! This process's resident memory, for "bytes per held lock".

/// Resident set size in bytes, from `/proc/self/statm` (Linux only): the
/// second field, in pages, times the page size. `None` elsewhere.
pub(crate) fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok()??;
    Some(pages * u64::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn reads_a_plausible_size() {
        let rss = super::resident_bytes().unwrap();
        assert!(rss > 100_000, "{rss}");
    }
}
