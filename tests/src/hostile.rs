//! Hostile rule documents, as an attacker with write access to one config-centre key would
//! publish them (what a child process costs while it reads them: [`crate::peak_rss`]).

/// A "billion laughs" document of `kind` (`condition`, `tag` or `configurators`): nine
/// levels of nine aliases to the level below, about 620 bytes, 9^9 strings when expanded.
pub fn billion_laughs(kind: &str) -> String {
    let mut s =
        String::from("configVersion: v3.0\nlol0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
    for i in 1..=8 {
        let p = i - 1;
        s.push_str(&format!(
            "lol{i}: &l{i} [*l{p},*l{p},*l{p},*l{p},*l{p},*l{p},*l{p},*l{p},*l{p}]\n"
        ));
    }
    s.push_str(valid_body(kind));
    s
}

/// A document of `kind` whose body holds a block sequence nested `depth` levels deep
/// (`- - - ... - x` on one line: two bytes per level).
pub fn deep_sequence(kind: &str, depth: usize) -> String {
    let mut s = String::from("configVersion: v3.0\nnest:\n  ");
    for _ in 0..depth {
        s.push_str("- ");
    }
    s.push_str("x\n");
    s.push_str(valid_body(kind));
    s
}

/// The fields that make a rule of `kind` valid (the hostile part is an unknown field, which
/// a parser must still read: Java's SnakeYAML builds the whole document first).
fn valid_body(kind: &str) -> &'static str {
    match kind {
        "tag" => "key: app\ntags:\n  - name: gray\n    addresses: [\"127.0.0.1:1\"]\n",
        "configurators" => "scope: service\nkey: S\nconfigs:\n  - side: consumer\n    addresses: [0.0.0.0]\n    parameters:\n      timeout: 1\n",
        _ => "key: S\nconditions:\n  - => host = 127.0.0.1\n",
    }
}
