#!/usr/bin/env python3
"""Fails when a library crate's docs.rs root page lacks what a user holds.

Run after `cargo doc --workspace --no-deps`. rustdoc gives every item
re-exported at a crate's root a page of its own there; a glob re-export
from a `#[doc(hidden)]` module (as `lock_redis::users` is) gives none
unless marked `#[doc(inline)]`, and `cargo doc -D warnings` says nothing.
So this reads the user API off `lock_redis::users` itself and checks that
each item has its page at the root of both Redis crates, plus a few items
per crate that its landing page must link to.
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
doc = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "target" / "doc"


def users_items():
    """The names `pub mod users` in lock-redis re-exports."""
    src = (root / "lock-redis" / "src" / "lib.rs").read_text()
    body = src[src.index("pub mod users {"):]
    body = body[: body.index("\n}\n")]
    names = set()
    for use in re.findall(r"pub use ([^;]+);", body):
        if "{" in use:
            inner = use[use.index("{") + 1 : use.rindex("}")]
            names.update(n.strip().split("::")[-1] for n in inner.split(","))
        else:
            names.add(use.strip().split("::")[-1])
    # Modules re-exported whole (telemetry) are pages of their own.
    return {n for n in names if n}


def page(crate, name):
    """Whether the root page has the item: a page of its own at the root,
    or a re-export line linking to its page in a public module."""
    folder = doc / crate
    if (folder / name / "index.html").exists() or any(folder.glob(f"*.{name}.html")):
        return True
    text = (folder / "index.html").read_text()
    return re.search(rf'href="[^"]*(\.|/){re.escape(name)}(\.html|/index\.html)"', text) is not None


# Links to other crates (`[`redis`]`) resolve on docs.rs, which documents
# the dependencies too; `cargo doc --no-deps` leaves them unlinked.
EXTERNAL = {"redis", "metrics", "tokio", "tracing", "proptest", "mlua"}


missing = []
wanted = {
    "lock_redis": users_items() | {"connect", "RedisConfig"},
    "lock_redis_cluster": users_items() | {"connect", "ClusterConfig"},
    "lock_testkit": {"InMemoryServer"},
    "lock_core": {"Lock", "Guard", "LockError", "ClientConfig", "backend"},
}
for crate, names in wanted.items():
    index = doc / crate / "index.html"
    if not index.exists():
        missing.append(f"{crate}: no docs at {index} (run cargo doc first)")
        continue
    for name in sorted(names):
        if not page(crate, name):
            missing.append(f"{crate}: `{name}` has no page at the crate root")
    # An intra-doc link that did not resolve is shown as literal brackets.
    text = index.read_text()
    for literal in sorted(set(re.findall(r"\[<code>([A-Za-z_:]+)</code>\]", text))):
        if literal.split("::")[0] not in EXTERNAL:
            missing.append(f"{crate}: the root page shows an unresolved link [`{literal}`]")
if missing:
    print("landing pages incomplete:", *missing, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"landing pages: {sum(len(v) for v in wanted.values())} items on {len(wanted)} root pages")
