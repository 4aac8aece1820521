//! JSON numbers reach a real Java Dubbo 3.3.6 provider bit for bit: `dubbo-registry invoke`
//! arguments such as `399.96000000000004` (one ulp above `399.96`) or `3.4028234663852886e38`
//! (`Float.MAX_VALUE`) arrive exactly, over Dubbo2 (Hessian2), Triple wrapper mode (Hessian2 in
//! `TripleRequestWrapper`) and Triple IDL mode (protobuf `double`/`float`). The provider answers
//! with the raw bits it decoded (`Double.doubleToRawLongBits`, `Float.floatToRawIntBits`).
//!
//! Every step on the way keeps the bits: ARGS_JSON is parsed with serde_json's
//! `float_roundtrip` (the default fast parser can be one ulp off), Hessian2 writes a `double`
//! compactly only when Java's reader gives the same value back, and a Java `float` parameter
//! receives the double narrowed by Java (`(float) d`, correctly rounded).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::{json, Value};
use tests::peers::{JavaProvider, ProviderOptions};

/// Doubles whose text needs all 17 digits, subnormals, extremes, and values Hessian2 writes
/// compactly (int, short, byte, milli-units).
const DOUBLES: &[&str] = &[
    "399.96000000000004",
    "399.96",
    "0.30000000000000004",
    "0.1",
    "3.4028234663852886e38",
    "1.7976931348623157e308",
    "2.2250738585072014e-308",
    "4.9e-324",
    "1e-320",
    "123.456",
    "1.5",
    "0.001",
    "-2.5",
    "65536.5",
    "1e-7",
    "9007199254740993",
];

/// Floats (a Java `float` parameter; a proto3 `float` field).
const FLOATS: &[&str] = &[
    "3.4028234663852886e38",
    "0.1",
    "1.401298464324817e-45",
    "16777217",
    "0.30000001192092896",
];

fn double_bits(text: &str) -> String {
    format!("{:x}", text.parse::<f64>().unwrap().to_bits())
}

fn float_bits(text: &str) -> String {
    // Java narrows the double it receives: the float nearest to the exact double.
    format!("{:x}", (text.parse::<f64>().unwrap() as f32).to_bits())
}

fn provider_opts(test: &str) -> ProviderOptions {
    ProviderOptions {
        app: tests::unique(&format!("jn-{test}")).replace('_', "-"),
        version: Some("1.0.0".into()),
        ..ProviderOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doubles_and_floats_reach_the_java_provider_bit_for_bit_over_dubbo_and_tri_wrapper() {
    let test = "exact_numbers_hessian";
    let Some(p) = JavaProvider::start(test, &provider_opts(test)).await else {
        return;
    };
    for target in [p.dubbo_target(), p.tri_target()] {
        for (method, ty, values, bits) in [
            (
                "doubleBits",
                "double",
                DOUBLES,
                double_bits as fn(&str) -> String,
            ),
            ("floatBits", "float", FLOATS, float_bits),
        ] {
            for text in values {
                let args = format!("[{text}]");
                let out = common::invoke(&[
                    &target,
                    common::interop::DEMO,
                    method,
                    &args,
                    "--types",
                    ty,
                    "--version",
                    "1.0.0",
                    "--json",
                    // The bits are under test, not the latency: a loaded machine's first call to
                    // a fresh JVM can take seconds.
                    "--timeout",
                    "20000",
                ])
                .await;
                assert_eq!(out.code, 0, "{target} {method}({text}): {}", out.stderr);
                assert_eq!(
                    out.json()["result"],
                    json!(bits(text)),
                    "{target} {method}({text}): the bits the provider decoded"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proto_double_and_float_fields_reach_the_java_provider_bit_for_bit() {
    let test = "exact_numbers_idl";
    let Some(p) = JavaProvider::start(test, &provider_opts(test)).await else {
        return;
    };
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/peers/java-dubbo3/src/main/proto/greet.proto"
    );
    let target = p.tri_target();
    let pairs = DOUBLES.iter().zip(FLOATS.iter().cycle());
    for (ratio, share) in pairs {
        // As JSON numbers and as proto3 JSON strings.
        for quoted in [false, true] {
            let field = |t: &str| -> Value {
                if quoted {
                    json!(t)
                } else {
                    serde_json::from_str(t).unwrap()
                }
            };
            let args = json!([{"name": "n", "ratio": field(ratio), "share": field(share)}]);
            let out = common::invoke(&[
                &target,
                "dubbo.peer.greet.Greeter",
                "Greet",
                &args.to_string(),
                "--proto",
                proto,
                "--version",
                "1.0.0",
                "--json",
                "--timeout",
                "20000",
            ])
            .await;
            assert_eq!(out.code, 0, "{args}: {}", out.stderr);
            assert_eq!(
                out.json()["result"]["bits"],
                json!(format!("{} {}", double_bits(ratio), float_bits(share))),
                "{args}: the bits the provider decoded"
            );
        }
    }
}
