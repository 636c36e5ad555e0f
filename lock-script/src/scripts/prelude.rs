//! The part of `common.lua` (and of a kind's helper files) one script
//! needs.
//!
//! Redis runs a script's whole text on every `EVALSHA`, and each `local
//! function` of the prelude is a closure Lua allocates again on each run,
//! whether the script calls it or not: measured on redis 7.0.15 (callgrind,
//! instructions inside `EVALSHA` per acquire + release pair of the
//! reentrant lock, over two empty scripts), the whole of `common.lua` costs
//! about 22 000 of a pair's 134 000, and 14 empty functions alone about
//! 12 000; given only what they reach, the pair's scripts cost 6 500
//! fewer. So a script
//! gets only the definitions it reaches: those its own text names, then
//! those they name, and so on.
//!
//! `common.lua`, then each helper file of the kind, is read as a list of
//! top-level definitions: each starts at a line beginning with `local ` and
//! runs to the next such line or the file's end (the comments after a
//! definition go with it; a file's header comment, before its first
//! definition, is dropped). A definition is kept when a name it defines
//! appears as a whole word in the script or in a kept definition; kept
//! definitions stay in their order (the files' order, then each file's),
//! so each is defined before its first use, as in the files: a kind's
//! helper may call `common.lua`'s, never the other way round. Which is why
//! these files hold nothing but `local` definitions at their top level.

/// One top-level definition of the prelude: its text and the names it
/// defines.
struct Definition<'a> {
    text: &'a str,
    names: Vec<&'a str>,
}

/// The definitions of `libraries` that `body` reaches, in the libraries'
/// order.
pub(super) fn reached(libraries: &[&str], body: &str) -> String {
    let definitions: Vec<Definition<'_>> = libraries.iter().flat_map(|l| split(l)).collect();
    let mut kept = vec![false; definitions.len()];
    // The texts whose mentions count: the body, then each definition kept.
    let mut reaching = vec![body];
    while let Some(text) = reaching.pop() {
        for (definition, kept) in definitions.iter().zip(kept.iter_mut()) {
            if !*kept && definition.names.iter().any(|name| mentions(text, name)) {
                *kept = true;
                reaching.push(definition.text);
            }
        }
    }
    let mut lua = String::new();
    for (definition, _) in definitions.iter().zip(&kept).filter(|(_, kept)| **kept) {
        lua.push_str(definition.text);
        // A file's last definition may lack its newline: the next text
        // must not run on into its `end`.
        if !lua.ends_with('\n') {
            lua.push('\n');
        }
    }
    lua
}

/// `prelude` cut at each line that starts a top-level `local`. Text
/// before the first such line (the file's header comment) is dropped.
fn split(prelude: &str) -> Vec<Definition<'_>> {
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    for line in prelude.split_inclusive('\n') {
        if line.starts_with("local ") {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let end = starts.get(i + 1).copied().unwrap_or(prelude.len());
            let text = &prelude[start..end];
            Definition {
                text,
                names: names(text),
            }
        })
        .collect()
}

/// The names a definition's first line defines: `local function f(...)`,
/// `local x = ...` or `local a, b = ...`.
fn names(text: &str) -> Vec<&str> {
    let first = text.lines().next().unwrap_or_default();
    let declared = first.trim_start_matches("local ");
    let declared = declared.strip_prefix("function ").unwrap_or(declared);
    let declared = declared.split(['=', '(']).next().unwrap_or_default();
    declared
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect()
}

/// Whether `name` appears in `text` as a whole identifier, on a line
/// that is not a comment: a script's header that names a helper
/// ("no request record") does not bring it in. (None of these files has
/// a long string, so a line starting `--` is a comment.)
fn mentions(text: &str, name: &str) -> bool {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .any(|line| mentions_in_line(line, name))
}

fn mentions_in_line(line: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRELUDE: &str = "-- header\n\
        local A = 'a'\n\
        local function uses_a()\n    return A\nend\n\
        -- about the next one\n\
        local function alone()\n    return 1\nend\n\
        local x, y = 1, 2\n\
        local function uses_both()\n    return uses_a() + x\nend\n";

    #[test]
    fn keeps_only_what_the_body_reaches_in_order() {
        let lua = reached(&[PRELUDE], "return uses_both()");
        assert_eq!(
            lua,
            "local A = 'a'\n\
             local function uses_a()\n    return A\nend\n\
             -- about the next one\n\
             local x, y = 1, 2\n\
             local function uses_both()\n    return uses_a() + x\nend\n"
        );
    }

    #[test]
    fn a_name_inside_a_longer_one_is_no_mention() {
        assert_eq!(reached(&[PRELUDE], "return uses_a_lot, my_alone"), "");
        assert_eq!(
            reached(&[PRELUDE], "return alone()"),
            "local function alone()\n    return 1\nend\n"
        );
    }

    #[test]
    fn each_name_of_a_multiple_declaration_counts() {
        assert_eq!(reached(&[PRELUDE], "return y"), "local x, y = 1, 2\n");
    }

    #[test]
    fn a_later_library_reaches_into_an_earlier_one() {
        let kind = "-- a kind's helpers\n\
            local function counted()\n    return uses_a() + 1\nend\n\
            local function unused()\n    return alone()\nend\n";
        assert_eq!(
            reached(&[PRELUDE, kind], "return counted()"),
            "local A = 'a'\n\
             local function uses_a()\n    return A\nend\n\
             -- about the next one\n\
             local function counted()\n    return uses_a() + 1\nend\n"
        );
    }

    #[test]
    fn a_file_without_its_last_newline_does_not_run_on() {
        let kind = "local function last()\n    return 1\nend";
        assert_eq!(
            reached(
                &[kind, "local function next()\n    return last()\nend\n"],
                "next()"
            ),
            "local function last()\n    return 1\nend\n\
             local function next()\n    return last()\nend\n"
        );
    }

    #[test]
    fn a_name_in_a_comment_line_is_no_mention() {
        assert_eq!(
            reached(&[PRELUDE], "-- not alone()\n  -- nor A\nreturn 1"),
            ""
        );
        assert_eq!(
            reached(
                &[PRELUDE],
                "-- see\nreturn alone() -- a trailing comment counts"
            ),
            "local function alone()\n    return 1\nend\n"
        );
    }

    #[test]
    fn a_body_naming_nothing_gets_nothing() {
        assert_eq!(reached(&[PRELUDE], "return 1"), "");
    }

    #[test]
    fn common_lua_gives_a_renewal_only_what_it_calls() {
        let lua = reached(&[super::super::COMMON_LUA], include_str!("renew.lua"));
        assert!(lua.contains("local function extend("), "{lua}");
        assert!(!lua.contains("local function next_token("), "{lua}");
        assert!(!lua.contains("local function recorded("), "{lua}");
    }

    #[test]
    fn common_lua_helpers_bring_what_they_call() {
        let lua = reached(
            &[super::super::COMMON_LUA],
            "return recorded_acquire(KEYS[1], ARGV[1], KEYS[2])",
        );
        for helper in ["recorded", "store_now", "held_reply", "refuse_reentry"] {
            assert!(
                lua.contains(&format!("local function {helper}(")),
                "{helper}"
            );
        }
        assert!(lua.contains("local RECORD_HELD = "));
        assert!(!lua.contains("local function give_back("));
    }
}
