//! The Triple (`tri://`) part of `invoke`: `--proto FILE` selects IDL mode, otherwise wrapper
//! mode (plain Java interfaces, Hessian2 in `TripleRequestWrapper`).
//!
//! - IDL mode: the `.proto` files (repeatable; imports resolve relative to each file) are
//!   compiled without protoc. A SERVICE the files define (proto full name, or `java_package` +
//!   service name) is called on its proto path `/{package.Service}/{Rpc}`, as Dubbo's stub
//!   consumer does; METHOD matches the rpc exactly or with its first letter's case ignored.
//!   Any other SERVICE is called at `/{SERVICE}/{METHOD}` exactly as named: a plain Java
//!   interface whose methods take protobuf messages (`--proto-messages REQ,RESP` names them;
//!   without it, those of the only rpc named METHOD). ARGS_JSON is `[msg]` in proto3 JSON
//!   (omitted or `[]` = the empty message); the result prints as proto3 JSON (json names,
//!   64-bit integers as strings, enums by name, bytes as padded base64).
//! - Wrapper mode: `--types` (or the inferred types) become `argTypes` in Java's
//!   `Class.getName()` form.
//! - Headers: `grpc-timeout` from `--timeout`, `tri-service-version`/`tri-service-group` only
//!   with `--version`/`--group`, each `--attachment k=V` as the lower-cased header `k` (with a
//!   `tri-header-convert` map when `k` has capitals; `k-bin=V` sends V's bytes base64).
//! - `--tri-compressor gzip` compresses requests (`grpc-encoding` + the per-message flag);
//!   compressed responses are always read.
//! - `--tri-no-write-coalescing` writes every request at once (see
//!   `ConnectionOptions::write_coalescing`).
//! - Response headers and trailers that are not reserved become the result's attachments
//!   (`"attachments"` in `--json`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use invoker::rpc::InvokerFactory;
use protocol_triple::compression::Encoding;
use protocol_triple::{
    ConnectionOptions, IdlService, PayloadMode, ProtoSchema, TripleInvokerFactory, TripleLimits,
};

/// The Triple options of `invoke`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TripleArgs {
    /// A .proto file for tri:// providers (repeatable; imports relative to the file): selects
    /// IDL mode, with ARGS_JSON `[message]` in proto3 JSON. Without it, tri:// calls use
    /// wrapper mode (Hessian2 arguments typed by --types).
    #[arg(long = "proto", value_name = "FILE")]
    pub proto: Vec<PathBuf>,
    /// With --proto, for a SERVICE the .proto files do not define (a plain Java interface
    /// whose methods take and return protobuf messages): the request and response message
    /// full names, e.g. `pkg.GreetRequest,pkg.GreetReply`; the call goes to
    /// /SERVICE/METHOD as named.
    #[arg(
        long = "proto-messages",
        value_name = "REQUEST,RESPONSE",
        requires = "proto"
    )]
    pub proto_messages: Option<String>,
    /// Compress tri:// requests: gzip, deflate or identity (the default; Java's
    /// `dubbo.rpc.tri.compressor`).
    #[arg(long = "tri-compressor", value_name = "ENCODING")]
    pub compressor: Option<String>,
    /// Write every tri:// request at once, never held for company (by default, with 16 or more
    /// calls in flight on a connection, requests queued close together share one write, held
    /// at most about a millisecond).
    #[arg(long = "tri-no-write-coalescing")]
    pub no_write_coalescing: bool,
}

/// The `tri` entry of the protocol table: IDL mode for SERVICE when `--proto` is given.
pub fn factory(
    t: &TripleArgs,
    service: &str,
    limits: &super::invoke::LimitArgs,
    tls: &transport_tls::TlsConfig,
) -> anyhow::Result<Arc<dyn InvokerFactory>> {
    let mode = if t.proto.is_empty() {
        PayloadMode::Wrapper
    } else {
        let schema = ProtoSchema::load(&t.proto).context("--proto")?;
        let idl = IdlService::new(Arc::new(schema), service);
        PayloadMode::Idl(match &t.proto_messages {
            None => idl,
            Some(m) => match m.split_once(',') {
                Some((req, resp)) if !req.trim().is_empty() && !resp.trim().is_empty() => {
                    let idl = idl.with_messages(req.trim(), resp.trim());
                    // Fail now on an unknown message name, not at the first call.
                    idl.schema
                        .interface_method(service, "m", req.trim(), resp.trim())
                        .context("--proto-messages")?;
                    idl
                }
                _ => anyhow::bail!("--proto-messages takes REQUEST,RESPONSE (two message names)"),
            },
        })
    };
    let encoding = match &t.compressor {
        Some(name) => Encoding::from_name(name).map_err(|e| {
            anyhow::anyhow!("--tri-compressor: {e} (use gzip, deflate or identity)")
        })?,
        None => Encoding::Identity,
    };
    let options = ConnectionOptions {
        write_coalescing: !t.no_write_coalescing,
        ..ConnectionOptions::default()
    };
    let limits = TripleLimits {
        max_payload: limits.max_payload,
        hessian: limits.hessian(),
        ..TripleLimits::default()
    };
    Ok(Arc::new(
        TripleInvokerFactory::with_options(mode, options)
            .with_request_compression(encoding)
            .with_limits(limits)
            .with_tls(tls)?,
    ))
}
