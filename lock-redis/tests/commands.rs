//! Which commands the client needs: `docs/commands.md` lists every command
//! the kinds' scripts call (read from the scripts themselves, so the table
//! cannot go stale), and a connect fails, naming them, when the server
//! does not know one; a server that refuses `COMMAND` is not checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lock_redis::commands::{self, PUBSUB, SCRIPTS, SHARDED_PUBSUB, TRANSPORT};
use lock_redis::{ClientConfig, RedisConfig};
use lock_testkit::fixtures::RedisServer;

/// The script folders, each with the docs table's column for it.
const FOLDERS: [(&str, &str); 8] = [
    ("lock-script/src/scripts", "shared"),
    ("lock-redis/src/kinds/reentrant", "reentrant"),
    ("lock-redis/src/kinds/lean", "lean"),
    ("lock-redis/src/kinds/rwlock", "read-write"),
    ("lock-fair/src/scripts", "fair"),
    ("lock-redis/src/kinds/semaphore", "semaphore"),
    (
        "lock-redis/src/kinds/permit_semaphore",
        "expirable-permit semaphore",
    ),
    ("lock-redis/src/kinds/latch", "latch"),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn lua_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            lua_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "lua") {
            found.push(path);
        }
    }
}

/// The names in `redis.call('x'` and `redis.pcall('x'` (either quote),
/// upper-cased.
fn called_commands(script: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for call in ["redis.call(", "redis.pcall("] {
        for (at, _) in script.match_indices(call) {
            let rest = script[at + call.len()..].trim_start();
            let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                continue; // a command passed in ARGV (the publish command)
            };
            let name: String = rest[1..].chars().take_while(|c| *c != quote).collect();
            found.insert(name.to_ascii_uppercase());
        }
    }
    found
}

/// Every command each folder's scripts call, by the folder's column.
fn script_commands() -> BTreeMap<&'static str, BTreeSet<String>> {
    let root = workspace();
    FOLDERS
        .iter()
        .map(|(folder, column)| {
            let mut files = Vec::new();
            lua_files(&root.join(folder), &mut files);
            assert!(!files.is_empty(), "no scripts under {folder}");
            let commands = files
                .iter()
                .flat_map(|f| called_commands(&std::fs::read_to_string(f).unwrap()))
                .collect();
            (*column, commands)
        })
        .collect()
}

/// The script table of docs/commands.md: command → the columns ticked.
fn docs_table() -> (String, BTreeMap<String, BTreeSet<String>>) {
    let docs = std::fs::read_to_string(workspace().join("docs/commands.md")).unwrap();
    let section = docs
        .split("## Inside the scripts")
        .nth(1)
        .expect("docs/commands.md has its script table");
    let mut rows = section.lines().filter(|l| l.starts_with('|'));
    let header: Vec<String> = cells(rows.next().expect("a header row"));
    let mut table = BTreeMap::new();
    for row in rows.skip(1) {
        let cells = cells(row);
        let command = cells[0].trim_matches('`').to_owned();
        let ticked = header
            .iter()
            .zip(&cells)
            .skip(1)
            .filter(|(_, cell)| cell.as_str() == "✓")
            .map(|(column, _)| column.clone())
            .collect();
        table.insert(command, ticked);
    }
    (docs, table)
}

fn cells(row: &str) -> Vec<String> {
    row.trim()
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_owned())
        .collect()
}

#[test]
fn the_script_parser_finds_both_quotes_and_skips_argv() {
    let found = called_commands(
        "redis.call('hset', KEYS[1]) redis.pcall( \"PTTL\", k) redis.call(ARGV[2], ch, m)",
    );
    assert_eq!(
        found,
        BTreeSet::from(["HSET".to_owned(), "PTTL".to_owned()])
    );
}

/// Every command a script calls has its row, ticked in its folder's
/// column, and every tick is a call some script makes.
#[test]
fn the_docs_table_lists_every_command_the_scripts_call() {
    let (_, table) = docs_table();
    let scripts = script_commands();
    let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (column, commands) in &scripts {
        for command in commands {
            expected
                .entry(command.clone())
                .or_default()
                .insert((*column).to_owned());
        }
    }
    for (command, columns) in &expected {
        let ticked = table
            .get(command)
            .unwrap_or_else(|| panic!("docs/commands.md lacks {command} (called in {columns:?})"));
        assert_eq!(ticked, columns, "docs/commands.md: the row of {command}");
    }
    let extra: Vec<_> = table
        .keys()
        .filter(|c| !expected.contains_key(*c))
        .collect();
    assert!(extra.is_empty(), "no script calls {extra:?}");
}

/// The connect check covers the same commands as the docs, and every
/// transport command it checks is in the transport table.
#[test]
fn the_connect_check_checks_what_the_docs_list() {
    let (docs, table) = docs_table();
    let checked: BTreeSet<String> = SCRIPTS.iter().map(|n| n.command.to_owned()).collect();
    let listed: BTreeSet<String> = table.keys().cloned().collect();
    assert_eq!(checked, listed);
    let transport = TRANSPORT.iter().chain(PUBSUB).chain(SHARDED_PUBSUB);
    for need in transport.chain([&commands::REPLICA_SYNC, &commands::CLUSTER]) {
        assert!(
            docs.contains(&format!("| `{}` |", need.command)),
            "docs/commands.md lacks {}",
            need.command
        );
    }
}

async fn connect(config: RedisConfig) -> lock_redis::Result<lock_redis::LockClient> {
    lock_redis::connect(config, ClientConfig::default()).await
}

/// `rename-command EVALSHA ""` (as hosted services do with some commands):
/// the connect fails naming the command and what needs it; a lazy connect
/// checks nothing.
#[tokio::test]
async fn a_disabled_command_fails_the_connect_naming_it() {
    let server = RedisServer::builder()
        .arg("--rename-command")
        .arg("EVALSHA")
        .arg("")
        .arg("--rename-command")
        .arg("HGETALL")
        .arg("HGETALL_RENAMED")
        .start();
    let e = connect(RedisConfig::new(server.url())).await.unwrap_err();
    assert!(e.is_unsupported() && !e.is_retryable(), "{e:?}");
    let message = e.to_string();
    assert!(message.contains("EVALSHA (every kind"), "{message}");
    assert!(
        message.contains("HGETALL (the reentrant and fair locks)"),
        "{message}"
    );
    assert!(!message.contains("HSET"), "{message}");

    let lazy = connect(RedisConfig::new(server.url()).lazy_connect(true)).await;
    lazy.expect("a lazy connect sends nothing").close().await;
}

/// `WAIT` is needed only with replica sync.
#[tokio::test]
async fn wait_is_needed_only_with_replica_sync() {
    let server = RedisServer::builder()
        .arg("--rename-command")
        .arg("WAIT")
        .arg("")
        .start();
    let client = connect(RedisConfig::new(server.url())).await.unwrap();
    client.close().await;
    let synced =
        RedisConfig::new(server.url()).replica_sync(1, std::time::Duration::from_millis(100));
    let e = connect(synced).await.unwrap_err();
    assert!(e.is_unsupported(), "{e:?}");
    assert!(e.to_string().contains("WAIT (replica sync)"), "{e}");
}

/// A user that may not run `COMMAND` (ACL `-command`), or a server that
/// renamed it: the check is skipped, and the locks work.
#[tokio::test]
async fn a_refused_command_command_skips_the_check() {
    let server = RedisServer::start();
    server.cmd(&[
        "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-command",
    ]);
    let url = format!("redis://app:pw@127.0.0.1:{}/", server.port());
    let client = connect(RedisConfig::new(url)).await.unwrap();
    let guard = client.lock("job").unwrap().lock().await.unwrap();
    guard.unlock().await.unwrap();
    client.close().await;

    let renamed = RedisServer::builder()
        .arg("--rename-command")
        .arg("COMMAND")
        .arg("")
        .start();
    let client = connect(RedisConfig::new(renamed.url())).await.unwrap();
    let guard = client.lock("job").unwrap().lock().await.unwrap();
    guard.unlock().await.unwrap();
    client.close().await;
}

/// `SCRIPT` disabled: the scripts cannot be loaded, and the error says
/// which command is missing rather than only that loading failed.
#[tokio::test]
async fn a_disabled_script_command_is_named() {
    let server = RedisServer::builder()
        .arg("--rename-command")
        .arg("SCRIPT")
        .arg("")
        .start();
    let e = connect(RedisConfig::new(server.url())).await.unwrap_err();
    assert!(e.is_unsupported(), "{e:?}");
    assert!(e.to_string().contains("SCRIPT (loading the scripts"), "{e}");
}

/// Without credentials the server's `NOAUTH` is what the connect reports
/// (the long `COMMAND INFO` is not sent before the scripts load).
#[tokio::test]
async fn no_credentials_is_unauthorized_not_a_protocol_error() {
    let server = RedisServer::builder().password("pw").start();
    let url = format!("redis://127.0.0.1:{}/", server.port());
    let e = connect(RedisConfig::new(url)).await.unwrap_err();
    assert!(e.is_unauthorized(), "{e:?}");
}
