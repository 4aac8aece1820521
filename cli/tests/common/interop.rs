//! Shared pieces of the interop tests against the real Dubbo 3.3 Java and dubbo-go peers
//! (`tests::peers`): the table of calls whose values must round-trip, the Java consumer's
//! answers to the same calls (both protocols are referred through the front door's
//! `dubbo_consumer::Protocols`).

use std::time::Duration;

use serde_json::{json, Value};

/// The demo interface both peers export.
pub const DEMO: &str = "com.example.peer.DemoService";
/// The second interface of the peers' application.
pub const ECHO: &str = "com.example.peer.EchoService";

/// One call of the value table: method, JSON arguments, Java types (`--types`), and what the
/// result must be.
#[derive(Debug, Clone)]
pub struct Case {
    /// Method name.
    pub method: &'static str,
    /// Arguments (a JSON array).
    pub args: Value,
    /// `--types`, comma separated (`None`: inferred).
    pub types: Option<&'static str>,
    /// The result every consumer must get.
    pub want: Value,
}

fn case(method: &'static str, args: Value, types: Option<&'static str>, want: Value) -> Case {
    Case {
        method,
        args,
        types,
        want,
    }
}

fn decimal(v: &str) -> Value {
    json!({"class": "java.math.BigDecimal", "value": v})
}

fn color(name: &str) -> Value {
    json!({"class": "com.example.peer.Color", "name": name})
}

/// A `com.example.peer.User` as JSON, every field present (Java's serializer writes them all).
pub fn user(name: &str, age: i64) -> Value {
    json!({"class": "com.example.peer.User", "name": name, "age": age, "score": 0.0, "tags": null,
           "attrs": null, "color": null, "balance": null})
}

/// What `getUser(name)` returns.
pub fn full_user(name: &str) -> Value {
    json!({"class": "com.example.peer.User", "name": name, "age": 42, "score": 97.5,
           "tags": ["a", "b"], "attrs": {"k": "v"}, "color": color("GREEN"),
           "balance": decimal("12345678901234567890.123456789")})
}

/// Every value kind of the demo service: strings (4-byte UTF-8 included), int/long edges,
/// double, float (hessian-lite sends a float as the double of its decimal text), BigDecimal,
/// boolean, byte[], Date, POJOs with nested enum/decimal/list/map, lists, maps, enums,
/// overloads chosen by type, an async method, a void method and `Object`.
pub fn value_cases() -> Vec<Case> {
    let eve = json!({"class": "com.example.peer.User", "name": "eve", "age": 7, "score": 1.5,
                     "tags": ["x", "y"], "attrs": {"k": "v"}, "color": color("RED"),
                     "balance": decimal("1.50")});
    vec![
        case(
            "sayHello",
            json!(["rust ✓ 中文 😀"]),
            None,
            json!("Hello rust ✓ 中文 😀"),
        ),
        case("echoString", json!([""]), None, json!("")),
        case(
            "addInt",
            json!([2_147_483_647, -1]),
            Some("int,int"),
            json!(2_147_483_646),
        ),
        case(
            "addLong",
            json!([9_007_199_254_740_993i64, 1]),
            Some("long,long"),
            json!(9_007_199_254_740_994i64),
        ),
        case(
            "addDouble",
            json!([0.1, 0.2]),
            Some("double,double"),
            json!(0.30000000000000004),
        ),
        case(
            "addFloat",
            json!([0.1, 0.2]),
            Some("float,float"),
            json!(0.3),
        ),
        case(
            "addDecimal",
            json!([decimal("12345678901234567890.10"), decimal("0.005")]),
            Some("java.math.BigDecimal,java.math.BigDecimal"),
            decimal("12345678901234567890.105"),
        ),
        case("invert", json!([true]), Some("boolean"), json!(false)),
        case(
            "echoBytes",
            json!(["AAEC/w=="]),
            Some("byte[]"),
            json!("AAEC/w=="),
        ),
        case(
            "echoDate",
            json!([1_700_000_000_123i64]),
            Some("java.util.Date"),
            json!(1_700_000_000_123i64),
        ),
        case("getUser", json!(["bob"]), None, full_user("bob")),
        case(
            "echoUser",
            json!([eve.clone()]),
            Some("com.example.peer.User"),
            eve,
        ),
        case(
            "listUsers",
            json!([3]),
            Some("int"),
            json!([user("user0", 0), user("user1", 1), user("user2", 2)]),
        ),
        case(
            "echoList",
            json!([["a", "b", "c"]]),
            Some("java.util.List"),
            json!(["a", "b", "c"]),
        ),
        case(
            "echoMap",
            json!([{"a": 1, "b": 2}]),
            Some("java.util.Map"),
            json!({"a": 1, "b": 2}),
        ),
        case(
            "echoColor",
            json!([color("BLUE")]),
            Some("com.example.peer.Color"),
            color("BLUE"),
        ),
        case(
            "nextColor",
            json!([color("BLUE")]),
            Some("com.example.peer.Color"),
            color("RED"),
        ),
        case(
            "describe",
            json!(["x"]),
            Some("java.lang.String"),
            json!("string:x"),
        ),
        case("describe", json!([5]), Some("long"), json!("long:5")),
        case(
            "sayHelloAsync",
            json!(["a"]),
            None,
            json!("Hello a (async)"),
        ),
        case(
            "record",
            json!(["r1"]),
            Some("java.lang.String"),
            Value::Null,
        ),
        case(
            "echoObject",
            json!([{"class": "com.example.peer.User", "name": "obj", "age": 1}]),
            Some("java.lang.Object"),
            user("obj", 1),
        ),
    ]
}

/// The `--batch` argument of the Java consumer for `cases`.
pub fn batch(cases: &[Case]) -> String {
    Value::Array(
        cases
            .iter()
            .map(|c| json!({"method": c.method, "args": c.args, "types": c.types}))
            .collect(),
    )
    .to_string()
}

/// Runs `cases` through the real Java consumer (`connect` = `--url ...` or `--registry ...`
/// plus group/version); its answers in order, or `None` after a loud skip.
pub async fn java_answers(test: &str, connect: &[&str], cases: &[Case]) -> Option<Vec<Value>> {
    let b = batch(cases);
    let mut args: Vec<&str> = connect.to_vec();
    args.extend(["--batch", b.as_str()]);
    let run = tests::peers::java_consumer(test, &args, Duration::from_secs(120)).await?;
    let answers = run.json["batch"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{test}: no batch in {} ({})", run.json, run.log.display()));
    assert_eq!(answers.len(), cases.len(), "{test}: {}", run.json);
    Some(answers)
}

/// `dubbo-registry invoke TARGET SERVICE METHOD ARGS [--types T] EXTRA... --json`.
pub async fn ours(target: &str, service: &str, c: &Case, extra: &[&str]) -> super::Out {
    let args = c.args.to_string();
    let mut v: Vec<&str> = vec![target, service, c.method, args.as_str()];
    if let Some(t) = c.types {
        v.extend(["--types", t]);
    }
    v.extend(extra);
    v.push("--json");
    super::invoke(&v).await
}
