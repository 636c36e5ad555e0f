//! `rust-version` in the workspace's Cargo.toml is the real minimum: the
//! highest `rust-version` any locked dependency declares. Only one toolchain
//! can be installed on our machines, so the claim cannot be checked by
//! building with an older compiler; instead it is derived from the lock
//! file here, and clippy's `incompatible_msrv` lint checks our own code's
//! use of the standard library against it.

use std::process::Command;

/// `1.89` and `1.89.0` are the same version.
fn version_key(v: &str) -> [u64; 3] {
    let mut key = [0; 3];
    for (slot, part) in key.iter_mut().zip(v.split('.')) {
        *slot = part.parse().unwrap_or(0);
    }
    key
}

#[test]
fn rust_version_is_the_highest_one_locked_dependencies_need() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let mut needed: Option<(&str, String)> = None;
    let mut ours = Vec::new();
    for p in packages {
        let name = p["name"].as_str().unwrap_or("?");
        let Some(rv) = p["rust_version"].as_str() else {
            continue;
        };
        if p["source"].is_null() {
            ours.push((name, rv));
        } else if needed
            .as_ref()
            .is_none_or(|(_, best)| version_key(rv) > version_key(best))
        {
            needed = Some((name, rv.to_owned()));
        }
    }
    let (dep, needed) = needed.expect("some dependency declares a rust-version");
    for (crate_name, rv) in ours {
        assert_eq!(
            version_key(rv),
            version_key(&needed),
            "{crate_name} claims rust-version {rv}, but the locked {dep} needs {needed}: \
             set rust-version = \"{needed}\" in the workspace Cargo.toml"
        );
    }
}
